// The handler's tests, on Node.js with the SDK's test client: npm test.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HandlerError, TestClient } from '@atrium/sdk/testing';

import app from '../src/app.js';

test('greet uses the install greeting', async () => {
  const client = new TestClient(app).setting('greeting', 'Welcome');
  assert.deepEqual(await client.callTool('greet', { name: 'Ada' }), { message: 'Welcome, Ada!' });
});

test('greet says Hello without a greeting', async () => {
  assert.deepEqual(await new TestClient(app).callTool('greet', { name: 'Ada' }), { message: 'Hello, Ada!' });
});

test('greet greets the world without a name', async () => {
  assert.deepEqual(await new TestClient(app).callTool('greet', {}), { message: 'Hello, world!' });
});

test('greet refuses an empty name', async () => {
  await assert.rejects(new TestClient(app).callTool('greet', { name: ' ' }), (e) => e instanceof HandlerError && e.tag === 'invalid-input');
});
