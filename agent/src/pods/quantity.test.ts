import t from 'tap';
import { quantityNanos, resourceFieldValue } from './quantity.js';

const NODE = { cpu: '2', memory: '4Gi', 'ephemeral-storage': '100Gi' };

t.test('quantities parse exactly, in nano-units', async (t) => {
  t.equal(quantityNanos('500m'), 500_000_000n);
  t.equal(quantityNanos('1Ki'), 1024_000_000_000n);
  t.equal(quantityNanos('1.5'), 1_500_000_000n);
  t.equal(quantityNanos('1e3'), 1000_000_000_000n);
  t.equal(quantityNanos('0.5n'), 1n, 'a finer value rounds up');
  t.equal(quantityNanos('1.2.3'), null);
  t.equal(quantityNanos('10Qi'), null);
});

t.test('resourceFieldRef values: requests as set (0 unset), limits as the node\'s allocatable, divided and rounded up', async (t) => {
  const res = { requests: { cpu: '250m', memory: '64Mi' }, limits: {} };
  t.equal(resourceFieldValue('requests.cpu', res, undefined, NODE), '1', '250m in cores, rounded up');
  t.equal(resourceFieldValue('requests.cpu', res, '1m', NODE), '250');
  t.equal(resourceFieldValue('requests.memory', res, '1Mi', NODE), '64');
  t.equal(resourceFieldValue('requests.memory', res, undefined, NODE), String(64 * 1024 * 1024));
  t.equal(resourceFieldValue('limits.cpu', res, undefined, NODE), '2', 'no limit: the node\'s');
  t.equal(resourceFieldValue('limits.memory', res, '1Gi', NODE), '4');
  t.equal(resourceFieldValue('requests.ephemeral-storage', res, undefined, NODE), '0');
  t.equal(resourceFieldValue('limits.memory', { limits: { memory: '100Mi' } }, '1Mi', NODE), '100', 'a limit as set');
  t.throws(() => resourceFieldValue('limits.cpu', res, 'x', NODE), /invalid divisor/);
});
