/**
 * The scheduler bench end to end, small: a control plane of its own with 5 Nodes, 50 Pods created, every one seen
 * bound, the report printed, exit 0, and its data directory gone afterwards. No root (127.0.0.1 only).
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

t.test('bench:scheduler --nodes 5 --pods 50 binds every Pod and reports it', async (t) => {
  const before = readdirSync('/tmp').filter((d) => d.startsWith('nn-bench-scheduler-'));
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/scheduler/run.ts', '--nodes', '5', '--pods', '50', '--cycle-pods', '20', '--clients', '4'], { timeout: 120_000 });
  t.match(stdout, /\| 5 \| 50 \| 50 \| [\d,]+ \| [\d,]+ \|/, 'the live row: 5 nodes, 50 pods, 50 bound');
  t.match(stdout, /\| 5 \| 50 \| 50 \| [\d,]+ \| [\d,]+ \/ [\d,]+ \/ [\d,]+ \| [\d,.]+ \|/, 'the backlog row: 50 bound once the Lease was let go');
  t.match(stdout, /\| 5 \| 5 \| 20 \| [\d,]+ \|/, 'the in-process cycle row: every node filtered (under 100)');
  const after = readdirSync('/tmp').filter((d) => d.startsWith('nn-bench-scheduler-'));
  t.same(after.filter((d) => !before.includes(d)), [], 'its data directory removed');
});
