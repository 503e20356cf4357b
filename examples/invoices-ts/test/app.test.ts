// The invoice desk's tests, on Node.js with the SDK's test client (the twin of
// examples/invoices/src/tests.rs). Run: npm test (node --import @atrium/sdk/register --test).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { HandlerError, TestClient, inboundEnvelope } from '@atrium/sdk/testing';
import { ToolCallError } from '@atrium/sdk';

import app from '../src/app.js';

const ALL_SCOPES = ['invoices.read', 'invoices.write', 'mail.send'];

function client(): TestClient {
  return new TestClient(app)
    .grant(ALL_SCOPES)
    .setting('company_name', 'Acme')
    .setting('approval_limit', 1000)
    .setting('approver', 'user-7')
    .mockTool(
      'records.query',
      [
        { id: 'inv-1', payer: 'Beta', amount: 120.0, status: 'new', issued_at: '2026-03-01' },
        { id: 'inv-2', payer: 'Gamma', amount: 80.0, status: 'overdue', issued_at: '2026-04-01' },
      ],
      { scopes: ['invoices.read'] },
    )
    .mockTool('records.update', { ok: true }, { scopes: ['invoices.write'] })
    .mockTool('records.put', { id: 'inv-9' }, { scopes: ['invoices.write'] })
    .mockTool('mail.send', { message_id: 'm-1' }, { scopes: ['mail.send'] });
}

/** The rejection of a call, as a HandlerError. */
async function failure(pending: Promise<unknown>): Promise<HandlerError> {
  try {
    await pending;
  } catch (e) {
    assert.ok(e instanceof HandlerError, String(e));
    return e;
  }
  assert.fail('the call succeeded');
}

test('list_invoices is newest first in the install currency', async () => {
  const result = await client().setting('currency', 'GBP').callTool('list_invoices', {});
  assert.equal(result.currency, 'GBP');
  assert.equal(result.invoices[0].id, 'inv-2');
  assert.equal(result.invoices[1].id, 'inv-1');
});

test('a missing scope is reported with the scopes needed', async () => {
  const bare = new TestClient(app).mockTool('records.query', [], { scopes: ['invoices.read'] });
  const err = await failure(bare.callTool('list_invoices', {}));
  assert.equal(err.tag, 'tool');
  assert.ok(err.val instanceof ToolCallError);
  const e = err.val as ToolCallError;
  assert.equal(e.decision, 'scope_denied');
  assert.deepEqual(e.neededScopes, ['invoices.read']);
});

test('approval updates the record and emits the event', async () => {
  const c = client();
  const result = await c.callTool('approve_invoice', { id: 'inv-1', amount: 120.0 });
  assert.equal(result.status, 'approved');
  assert.deepEqual(c.toolCalls.at(-1), [
    'records.update',
    { id: 'inv-1', fields: { status: 'approved', approved_by: 'user-7' } },
  ]);
  assert.deepEqual(c.emitted, [['invoice_approved', { id: 'inv-1', amount: 120.0, currency: 'EUR' }]]);
});

test('approval above the limit is refused before any change', async () => {
  const c = client();
  const err = await failure(c.callTool('approve_invoice', { id: 'inv-1', amount: 5000.0 }));
  assert.equal(err.tag, 'invalid-input');
  assert.match(String(err.val), /above the approval limit of 1000/);
  assert.deepEqual(c.toolCalls, []);
  assert.deepEqual(c.emitted, []);
});

test('bad arguments name the field', async () => {
  const err = await failure(client().callTool('approve_invoice', { id: 'inv-1' }));
  assert.equal(err.tag, 'invalid-input');
  assert.match(String(err.val), /amount/);
});

test('reminders use the install text', async () => {
  const c = client().setting('reminder_text', 'Please pay.');
  await c.callTool('send_reminder', { id: 'inv-2', to: 'ap@gamma.example' });
  const [tool, args] = c.toolCalls.at(-1)!;
  assert.equal(tool, 'mail.send');
  assert.deepEqual(args, { to: 'ap@gamma.example', subject: 'Invoice inv-2 from Acme', body: 'Please pay.' });
});

test('chasing asks the collector or promises a follow-up', async () => {
  const answer = (await client().callTool('chase_overdue', { id: 'inv-2' })) as Record<string, unknown>;
  assert.match(String(answer.draft), /^\[invoice-desk-ts:collector\] Invoice inv-2 is overdue\./);
  // Without a collector to answer, the typed error becomes a commitment.
  const offline = client().without('team.delegate');
  const refused = (await offline.callTool('chase_overdue', { id: 'inv-2' })) as Record<string, unknown>;
  assert.equal(refused.draft, null);
  assert.equal(refused.reason, 'not_available: `team.delegate` is not available on this host');
  assert.equal(refused.commitment, 'commitment-1');
  const [title, , agent, due] = offline.commitments[0];
  assert.deepEqual([title, agent, due], ['Chase invoice inv-2', 'collector', null]);
});

test('install needs the company name and logs the public link', async () => {
  const c = client();
  await c.install();
  assert.match(c.logs[0][1], /\/api\/apps\/invoice-desk-ts\/public\/t\/tenant-test\/files\/invoice-example\.pdf/);
  const err = await failure(new TestClient(app).install());
  assert.equal(err.tag, 'invalid-input');
  assert.match(String(err.val), /company_name/);
});

test('inbound invoice mail is filed and other mail ignored', async () => {
  const c = client();
  const envelope = inboundEnvelope({
    messageId: 'msg-1',
    channel: 'email',
    from: 'billing@beta.example',
    body: 'see attached',
    subject: 'Invoice 2026-004',
    receivedAt: '2026-05-01T10:00:00Z',
    attachmentIds: ['att-1'],
  });
  await c.inbound(envelope);
  await c.inbound({ ...envelope, subject: 'Lunch?' });
  const calls = c.toolCalls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0][0], 'records.put');
  assert.deepEqual((calls[0][1] as any).record.attachment_ids, ['att-1']);
});

test('nightly_reconcile reads the bank with the secret', async () => {
  const c = client()
    .mockSecret('BANK_API_KEY', 'k-123')
    .mockHttp('https://api.bank.example/v1/payments?status=settled', {
      status: 200,
      body: '[{"invoice_id":"inv-1"}]',
    });
  await c.schedule('nightly_reconcile');
  assert.deepEqual(c.httpRequests[0].headers, [['authorization', 'Bearer k-123']]);
  assert.deepEqual(c.toolCalls, [['records.update', { id: 'inv-1', fields: { status: 'paid' } }]]);
});

test('nightly_reconcile without the secret does nothing', async () => {
  const c = client();
  await c.schedule('nightly_reconcile');
  assert.deepEqual(c.httpRequests, []);
});

test('monday_digest emits one event per overdue invoice', async () => {
  const c = client();
  await c.schedule('monday_digest');
  assert.equal(c.emitted.length, 2);
  assert.equal(c.emitted[0][0], 'invoice_overdue');
});

test('entry_booked is handled and tells emitters apart', async () => {
  const c = client();
  const result = await c.simulateEvent('entry_booked', { invoice_id: 'inv-1', entry_id: 'e-5' });
  assert.deepEqual(result, { filed: true, invoice_id: 'inv-1', from: 'ledger' });
  const err = await failure(c.simulateEvent('customer_updated', {}));
  assert.equal(err.tag, 'no-handler');
  assert.equal(err.val, 'event `customer_updated`');
});

test('routes serve JSON, the patch and a public PDF', async () => {
  const c = client();
  const list = await c.request('GET', '/invoices?status=new');
  assert.equal(list.status, 200);
  assert.equal(list.json().currency, 'EUR');

  const patched = await c.request('PATCH', '/invoices/inv-1', { body: '{"status":"approved","amount":10}' });
  assert.equal(patched.status, 200, patched.text());
  assert.equal((await c.request('PATCH', '/invoices/inv-1', { body: 'not json' })).status, 400);
  assert.equal((await c.request('DELETE', '/invoices/inv-1')).status, 405);
  assert.equal((await c.request('GET', '/nothing')).status, 404);

  const pdf = await c.request('GET', '/files/invoice-inv-1.pdf');
  assert.equal(pdf.status, 200);
  assert.ok(pdf.text().startsWith('%PDF-1.4'));
  assert.ok(pdf.text().includes('Acme - invoice inv-1'));
});

test('every declared handler is registered', () => {
  const registration = app.registration();
  assert.deepEqual(registration.tools, ['approve_invoice', 'chase_overdue', 'list_invoices', 'send_reminder']);
  assert.deepEqual(registration.lifecycle, ['on_install', 'on_uninstall', 'on_inbound']);
  assert.deepEqual(registration.schedules, ['monday_digest', 'nightly_reconcile']);
  assert.deepEqual(registration.events, ['entry_booked']);
  assert.equal(registration.routes.length, 3);
});

test('the dev mock file drives a local run', async () => {
  const c = new TestClient(app)
    .grant(ALL_SCOPES)
    .mockFile(readFileSync(new URL('../atrium.dev.json', import.meta.url), 'utf8'));
  const listed = await c.callTool('list_invoices', {});
  assert.equal(listed.invoices[0].payer, 'Gamma SA');
  const err = await failure(c.callTool('send_reminder', { id: 'inv-2', to: 'ap@gamma.example' }));
  assert.equal(err.tag, 'tool');
  assert.equal((err.val as ToolCallError).decision, 'scope_denied');
  assert.deepEqual((err.val as ToolCallError).neededScopes, ['mail.send']);
});
