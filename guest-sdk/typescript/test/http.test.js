// Route matching as the host does it (atrium_manifest::match_route), and the HTTP types.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HttpRequest, HttpResponse, matchRoute } from '../src/index.js';

test('literal and placeholder segments', () => {
  assert.deepEqual(matchRoute('/invoices', '/invoices'), []);
  assert.deepEqual(matchRoute('/invoices', '/invoices/'), []);
  assert.equal(matchRoute('/invoices', '/invoice'), null);
  assert.deepEqual(matchRoute('/invoices/{id}', '/invoices/42'), [['id', '42']]);
  assert.deepEqual(matchRoute('/invoices/{id}', '/invoices/42?x=1'), [['id', '42']]);
  assert.equal(matchRoute('/invoices/{id}', '/invoices/'), null);
  assert.equal(matchRoute('/invoices/{id}', '/invoices/4/2'), null);
});

test('placeholders inside a segment', () => {
  assert.deepEqual(matchRoute('/files/inv-{id}.pdf', '/files/inv-7.pdf'), [['id', '7']]);
  assert.deepEqual(matchRoute('/files/inv-{id}.pdf', '/files/inv-7.2.pdf'), [['id', '7.2']]);
  assert.equal(matchRoute('/files/inv-{id}.pdf', '/files/inv-.pdf'), null);
  assert.equal(matchRoute('/files/inv-{id}.pdf', '/files/inv-7.txt'), null);
  assert.deepEqual(matchRoute('/d/{a}-{b}', '/d/x-y-z'), [['a', 'x'], ['b', 'y-z']]);
  assert.deepEqual(matchRoute('/files/invoice-{id}.pdf', '/files/invoice-inv-1.pdf'), [['id', 'inv-1']]);
  assert.equal(matchRoute('/x/{id}', `/x/${'a'.repeat(1025)}`), null);
});

test('requests and responses', () => {
  const request = new HttpRequest({ method: 'patch', path: '/a', query: 'x=1&y=2&x=3', headers: [['Content-Type', 'application/json']], body: '{"a":1}' });
  assert.equal(request.method, 'PATCH');
  assert.equal(request.queryParam('x'), '1');
  assert.equal(request.queryParam('z'), null);
  assert.equal(request.header('content-type'), 'application/json');
  assert.deepEqual(request.json(), { a: 1 });
  assert.equal(request.param('id'), null);
  const response = HttpResponse.json({ ok: true }, 202);
  assert.deepEqual([response.status, response.header('Content-Type'), response.text()], [202, 'application/json', '{"ok":true}']);
  assert.deepEqual([HttpResponse.status(204).status, HttpResponse.status(204).body.length], [204, 0]);
  assert.equal(new HttpResponse(200, { a: 'b' }, new Uint8Array([104, 105])).text(), 'hi');
  const notJson = HttpResponse.json(() => 1);
  assert.deepEqual([notJson.status, notJson.text()], [500, 'the response does not serialize: function is not JSON']);
});
