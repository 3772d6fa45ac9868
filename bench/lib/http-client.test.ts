import t from 'tap';
import { closedLoop, openLoop, outcomeOf, type Outcome } from './http-client.js';

const reply = (status: number, body: string) => ({ status, body: Buffer.from(body), sentAt: 10, endAt: 12.5 });

t.test('outcomeOf: 201 is success; otherwise the Status message', async (t) => {
  t.same(outcomeOf(reply(201, '{}')), { ok: true, latencyMs: 2.5 });
  t.same(outcomeOf(reply(201, '{}'), 8), { ok: true, latencyMs: 4.5 }, 'measured from a scheduled time when given');
  t.same(outcomeOf(reply(409, '{"kind":"Status","message":"services \\"a\\" already exists"}')), { ok: false, latencyMs: 2.5, error: '409 services "a" already exists' });
  t.same(outcomeOf(reply(502, 'bad gateway')), { ok: false, latencyMs: 2.5, error: '502 bad gateway' });
});

t.test('closedLoop: every index once, never more than `clients` in flight', async (t) => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  const r = await closedLoop(50, 4, async (i): Promise<Outcome> => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((res) => setImmediate(res));
    inFlight--;
    done.push(i);
    if (i === 7) throw new Error('boom');
    return { ok: true, latencyMs: 1 };
  });
  t.equal(most, 4);
  t.same([...done].sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i));
  t.equal(r.outcomes.length, 50);
  t.match(r.outcomes.filter((o) => !o.ok), [{ ok: false, error: 'boom' }], 'a thrown request is an error outcome');
  t.equal((await closedLoop(2, 16, async () => ({ ok: true, latencyMs: 1 }))).outcomes.length, 2, 'more clients than requests');
});

t.test('openLoop: requests leave on schedule whatever the answers', async (t) => {
  const scheduled: number[] = [];
  const sentAt: number[] = [];
  const r = await openLoop(20, 500, async (i, at) => {
    scheduled[i] = at;
    sentAt[i] = performance.now();
    await new Promise((res) => setTimeout(res, 30)); // slower than the 2 ms spacing: a closed loop would fall behind
    return { ok: true, latencyMs: performance.now() - at };
  });
  t.equal(r.outcomes.length, 20);
  t.ok(Math.abs(scheduled[19]! - scheduled[0]! - 38) < 1e-6, '2 ms apart');
  t.ok(sentAt.every((s, i) => s >= scheduled[i]!), 'none early');
  t.ok(r.wallMs < 38 + 30 + 200, `the slow answers do not hold back the schedule (wall ${r.wallMs.toFixed(0)} ms)`);
  t.ok(r.maxLagMs >= 0);
});
