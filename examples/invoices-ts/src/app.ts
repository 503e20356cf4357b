// Invoice Desk, in TypeScript: files incoming invoices, approves them within a limit, chases
// late payers. The twin of examples/invoices (Rust): the same manifest (app_id
// invoice-desk-ts), the same tools, settings, secrets, events, hooks, schedules and routes,
// and the same answers to every call.
//
// - tools with scopes (`list_invoices`, `approve_invoice`, `send_reminder`) that call the
//   platform's record and mail tools;
// - install settings (`company_name`, `approval_limit`, `currency`, `reminder_text`, `approver`);
// - a secret (`BANK_API_KEY`) and outbound HTTP to a declared egress host (`*.bank.example`);
// - events it emits (`invoice_approved`, `invoice_overdue`) and one it handles
//   (`entry_booked` from the ledger app);
// - agents: the clerk delegates to the collector (`chase_overdue`), and when the collector
//   cannot answer (`AgentCallError`) it records a commitment instead;
// - lifecycle hooks and named schedules;
// - HTTP routes, one of them public (an invoice as PDF).
//
// Platform tools used: `records.query` (scope `invoices.read`), `records.put` and
// `records.update` (`invoices.write`), `mail.send` (`mail.send`).

import {
  AgentCallError,
  App,
  FailedError,
  HttpResponse,
  InvalidInputError,
  ToolCallError,
  type AppEvent,
  type Ctx,
  type HttpRequest,
  type InboundEnvelope,
} from '@atrium/sdk';

import { singlePage } from './pdf.js';

/** An invoice as the platform's record store keeps it. */
export interface Invoice {
  id: string;
  payer: string;
  amount: number;
  status: string;
  issued_at: string;
}

type Args = Record<string, unknown>;

/** A required string argument; `invalid-input` naming the field otherwise. */
function requireString(args: Args, field: string): string {
  const value = args[field];
  if (value === undefined || value === null) throw new InvalidInputError(`the arguments do not match: missing field \`${field}\``);
  if (typeof value !== 'string') throw new InvalidInputError(`the arguments do not match: \`${field}\` must be a string`);
  return value;
}

/** A required number argument. */
function requireNumber(args: Args, field: string): number {
  const value = args[field];
  if (value === undefined || value === null) throw new InvalidInputError(`the arguments do not match: missing field \`${field}\``);
  if (typeof value !== 'number') throw new InvalidInputError(`the arguments do not match: \`${field}\` must be a number`);
  return value;
}

/** An optional string argument. */
function optionalString(args: Args, field: string): string | null {
  const value = args[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new InvalidInputError(`the arguments do not match: \`${field}\` must be a string`);
  return value;
}

function settingString(ctx: Ctx, key: string): string | null {
  const value = ctx.config.get(key);
  return typeof value === 'string' ? value : null;
}

function currency(ctx: Ctx): string {
  return settingString(ctx, 'currency') ?? 'EUR';
}

/** The records as invoices (missing fields defaulted), or `invalid_result` as the Rust SDK's `call_as`. */
function asInvoices(result: unknown): Invoice[] {
  const bad = (why: string) =>
    new ToolCallError({
      toolName: 'records.query',
      decision: 'invalid_result',
      message: `the result does not have the expected shape: ${why}`,
      neededScopes: [],
    });
  if (!Array.isArray(result)) throw bad('expected a list of invoices');
  return result.map((record: unknown) => {
    if (record === null || typeof record !== 'object') throw bad('an invoice is not an object');
    const r = record as Record<string, unknown>;
    const text = (key: string): string => {
      const v = r[key];
      if (v === undefined || v === null) return '';
      if (typeof v !== 'string') throw bad(`\`${key}\` is not a string`);
      return v;
    };
    if (typeof r.id !== 'string') throw bad('an invoice has no `id`');
    const amount = r.amount ?? 0;
    if (typeof amount !== 'number') throw bad('`amount` is not a number');
    return { id: r.id, payer: text('payer'), amount, status: text('status'), issued_at: text('issued_at') };
  });
}

async function query(ctx: Ctx, status: string | null): Promise<Invoice[]> {
  const filter: Record<string, unknown> = { record_type: 'invoice' };
  if (status !== null) filter.status = status;
  const invoices = asInvoices(await ctx.tools.call('records.query', filter));
  // Newest first (a stable sort, as the Rust twin's).
  return invoices.sort((a, b) => (a.issued_at < b.issued_at ? 1 : a.issued_at > b.issued_at ? -1 : 0));
}

async function listInvoices(ctx: Ctx, args: Args) {
  const invoices = await query(ctx, optionalString(args, 'status'));
  return { currency: currency(ctx), invoices };
}

async function approveInvoice(ctx: Ctx, args: Args) {
  const id = requireString(args, 'id');
  const amount = requireNumber(args, 'amount');
  const limitSetting = ctx.config.get('approval_limit');
  const limit = typeof limitSetting === 'number' ? limitSetting : 5000;
  if (amount > limit) {
    throw new InvalidInputError(`invoice ${id} is ${amount} ${currency(ctx)}, above the approval limit of ${limit}`);
  }
  const approver = settingString(ctx, 'approver') ?? '';
  await ctx.tools.call('records.update', { id, fields: { status: 'approved', approved_by: approver } });
  const emitted = await ctx.events.emit('invoice_approved', { id, amount, currency: currency(ctx) });
  return { id, status: 'approved', subscribers: emitted.wireCount };
}

async function sendReminder(ctx: Ctx, args: Args) {
  const id = requireString(args, 'id');
  const to = requireString(args, 'to');
  const text = settingString(ctx, 'reminder_text') ?? 'Your invoice is overdue.';
  const company = settingString(ctx, 'company_name') ?? '';
  const sent = await ctx.tools.call('mail.send', { to, subject: `Invoice ${id} from ${company}`, body: text });
  return { id, sent };
}

// Asks the collector to draft a reminder (team delegation from the clerk); when the collector
// cannot answer (`AgentCallError`), it promises a follow-up instead.
async function chaseOverdue(ctx: Ctx, args: Args) {
  const id = requireString(args, 'id');
  const prompt = `Invoice ${id} is overdue. Draft a short, polite and firm payment reminder.`;
  try {
    const draft = await ctx.team.delegate('collector', prompt, { fromAgent: 'clerk' });
    return { id, draft };
  } catch (e) {
    if (!(e instanceof AgentCallError)) throw e;
    const commitment = await ctx.commitments.add(
      `Chase invoice ${id}`,
      `The collector could not draft the reminder: ${e.reason}`,
      'collector',
    );
    return { id, draft: null, reason: e.reason, commitment };
  }
}

async function onInstall(ctx: Ctx) {
  const company = settingString(ctx, 'company_name');
  if (company === null || company.trim() === '') {
    throw new InvalidInputError('install setting company_name is required');
  }
  const example = ctx.publicCallbackUrl('/files/invoice-example.pdf');
  ctx.logger.info(`installed for tenant ${ctx.tenantId}; public invoice links look like ${example}`);
}

async function onUninstall(ctx: Ctx) {
  ctx.logger.info(`uninstalled for tenant ${ctx.tenantId}`);
}

async function onInbound(ctx: Ctx, envelope: InboundEnvelope) {
  const subject = envelope.subject ?? '';
  if (envelope.channel !== 'email' || !subject.toLowerCase().includes('invoice')) {
    ctx.logger.debug(`ignored inbound ${envelope.messageId} on ${envelope.channel}`);
    return;
  }
  const record = {
    payer: envelope.from,
    subject,
    status: 'new',
    issued_at: envelope.receivedAt,
    attachment_ids: envelope.attachmentIds,
    source_message: envelope.messageId,
  };
  await ctx.tools.call('records.put', { record_type: 'invoice', record });
}

async function nightlyReconcile(ctx: Ctx) {
  const key = ctx.secrets.get('BANK_API_KEY');
  if (key === null) {
    ctx.logger.warn('BANK_API_KEY is not set; skipping reconciliation');
    return;
  }
  const response = await ctx.http.send({
    method: 'GET',
    url: 'https://api.bank.example/v1/payments?status=settled',
    headers: [['authorization', `Bearer ${key}`]],
  });
  if (response.status !== 200) throw new FailedError(`the bank answered ${response.status}`);
  let payments: unknown;
  try {
    payments = response.json();
  } catch (e) {
    throw new FailedError(`JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(payments) || !payments.every((p) => typeof p?.invoice_id === 'string')) {
    throw new FailedError('JSON: expected a list of payments with an `invoice_id`');
  }
  for (const payment of payments as { invoice_id: string }[]) {
    await ctx.tools.call('records.update', { id: payment.invoice_id, fields: { status: 'paid' } });
  }
  ctx.logger.info(`reconciled ${payments.length} payments`);
}

async function mondayDigest(ctx: Ctx) {
  for (const invoice of await query(ctx, 'overdue')) {
    await ctx.events.emit('invoice_overdue', { id: invoice.id, payer: invoice.payer, amount: invoice.amount });
  }
}

async function entryBooked(ctx: Ctx, event: AppEvent) {
  const payload = event.payload as Record<string, unknown> | null;
  const field = (name: string): string => {
    const value = payload !== null && typeof payload === 'object' ? payload[name] : undefined;
    if (typeof value !== 'string') throw new InvalidInputError(`entry_booked payload: missing field \`${name}\``);
    return value;
  };
  const invoiceId = field('invoice_id');
  const entryId = field('entry_id');
  await ctx.tools.call('records.update', { id: invoiceId, fields: { ledger_entry: entryId } });
  return { filed: true, invoice_id: invoiceId, from: event.emitterAppId };
}

async function getInvoices(ctx: Ctx, request: HttpRequest) {
  const invoices = await query(ctx, request.queryParam('status'));
  return HttpResponse.json({ currency: currency(ctx), invoices });
}

async function patchInvoice(ctx: Ctx, request: HttpRequest) {
  const id = request.param('id') ?? '';
  const body = request.json();
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidInputError('the body is not the expected JSON: expected an object');
  }
  const status = body.status;
  const amount = body.amount;
  if (typeof status !== 'string' || typeof amount !== 'number') {
    throw new InvalidInputError('the body is not the expected JSON: `status` (a string) and `amount` (a number) are required');
  }
  if (status !== 'approved') return HttpResponse.text(422, 'only `approved` can be set through this route');
  return HttpResponse.json(await approveInvoice(ctx, { id, amount }));
}

async function invoicePdf(ctx: Ctx, request: HttpRequest) {
  const id = request.param('id') ?? '';
  const company = settingString(ctx, 'company_name') ?? 'Invoice Desk';
  return new HttpResponse(200, [['content-type', 'application/pdf']], singlePage(`${company} - invoice ${id}`));
}

/** The app: every handler, checked against atrium.app.yaml as it is registered. */
const app = App.fromManifest('atrium.app.yaml')
  .tool('list_invoices', { description: 'Lists the tenant\'s invoices, newest first.', scopesRequired: ['invoices.read'] }, listInvoices)
  .tool('approve_invoice', { scopesRequired: ['invoices.read', 'invoices.write'] }, approveInvoice)
  .tool('send_reminder', { scopesRequired: ['mail.send'] }, sendReminder)
  .tool('chase_overdue', { scopesRequired: [] }, chaseOverdue)
  .onInstall(onInstall)
  .onUninstall(onUninstall)
  .onInbound(onInbound)
  .onSchedule('nightly_reconcile', nightlyReconcile)
  .onSchedule('monday_digest', mondayDigest)
  .onEvent('entry_booked', entryBooked)
  .route('GET', '/invoices', getInvoices)
  .route('PATCH', '/invoices/{id}', patchInvoice)
  .route('GET', '/files/invoice-{id}.pdf', invoicePdf);

export default app;
