import t from 'tap';
import { firstProbeAt, initialProbeState, nextProbeAt, observe, probeActive } from './probe.js';

t.test('initial results as the kubelet starts them', async (t) => {
  t.equal(initialProbeState('readiness').result, 'Failure');
  t.equal(initialProbeState('liveness').result, 'Success');
  t.equal(initialProbeState('startup').result, 'Unknown');
});

t.test('thresholds: a result flips after a run of equal observations', async (t) => {
  const spec = { successThreshold: 2, failureThreshold: 3 };
  let s = initialProbeState('readiness');
  const seen: string[] = [];
  for (const ok of [true, false, true, true, false, false, true, false, false, false]) {
    s = observe(spec, s, ok);
    seen.push(s.result);
  }
  t.same(seen, ['Failure', 'Failure', 'Failure', 'Success', 'Success', 'Success', 'Success', 'Success', 'Success', 'Failure']);
});

t.test('timing and gating', async (t) => {
  t.equal(firstProbeAt({ initialDelaySeconds: 5 }, 1000), 6000);
  t.equal(nextProbeAt({ periodSeconds: 2 }, 6000), 8000);
  t.same([probeActive('startup', false), probeActive('startup', true), probeActive('liveness', false), probeActive('readiness', true)], [true, false, false, true]);
});
