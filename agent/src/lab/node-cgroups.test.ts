import t, { type Test } from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readNodeAgent, removeLabNodeCgroups } from './node-cgroups.js';

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'nn-node-cgroups-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A node's run directory whose record names two node directories (stand-ins for the cgroup ones), both there. */
function recordedNode(t: Test): { runDir: string; dirs: string[] } {
  const root = scratch(t);
  const runDir = join(root, 'n1', 'run');
  mkdirSync(runDir, { recursive: true });
  const dirs = [join(root, 'cpu', 'nodenet', 'n1-0a1b2c3d'), join(root, 'memory', 'nodenet', 'n1-0a1b2c3d')];
  for (const d of dirs) mkdirSync(join(d, 'podu1', 'app'), { recursive: true });
  writeFileSync(join(runDir, 'cgroups.json'), `${JSON.stringify({ nodeDirs: dirs })}\n`);
  return { runDir, dirs };
}

t.test('a lab node is named as its agent was started (agent.json); a directory without one is no node', async (t) => {
  const root = scratch(t);
  mkdirSync(join(root, 'n1'));
  writeFileSync(join(root, 'n1', 'agent.json'), JSON.stringify({ nodeName: 'n1', runDir: '/run/nodenet/lab/x/n1/run', stateDir: '/s', logLevel: 'debug' }));
  t.same(readNodeAgent(join(root, 'n1')), { nodeName: 'n1', runDir: '/run/nodenet/lab/x/n1/run' });
  mkdirSync(join(root, 'control-plane'));
  t.equal(readNodeAgent(join(root, 'control-plane')), null);
  mkdirSync(join(root, 'bad'));
  writeFileSync(join(root, 'bad', 'agent.json'), '{"nodeName": 3');
  t.equal(readNodeAgent(join(root, 'bad')), null, 'a damaged config is no node');
});

t.test('removed: the recorded directories that are gone, nothing reported', async (t) => {
  const { runDir, dirs } = recordedNode(t);
  const calls: string[][] = [];
  const r = await removeLabNodeCgroups({ nodeName: 'n1', runDir }, async (name, dir) => {
    calls.push([name, dir]);
    for (const d of dirs) rmSync(d, { recursive: true });
    rmSync(join(runDir, 'cgroups.json'));
  });
  t.same(calls, [['n1', runDir]], 'removeNodeCgroups called with the agent\'s node name and run directory');
  t.same(r, { removed: dirs, problem: null });
});

t.test('a directory that could not go (still recorded) is reported, the others counted as removed', async (t) => {
  const { runDir, dirs } = recordedNode(t);
  const r = await removeLabNodeCgroups({ nodeName: 'n1', runDir }, async () => {
    rmSync(dirs[0]!, { recursive: true });
    writeFileSync(join(runDir, 'cgroups.json'), `${JSON.stringify({ nodeDirs: [dirs[1]] })}\n`);
  });
  t.same(r.removed, [dirs[0]]);
  t.equal(r.problem, `cgroups of node n1 left: ${dirs[1]}`);
});

t.test('a removal that throws is reported, not thrown: the teardown goes on', async (t) => {
  const { runDir } = recordedNode(t);
  const r = await removeLabNodeCgroups({ nodeName: 'n1', runDir }, async () => { throw new Error('EACCES: permission denied'); });
  t.same(r, { removed: [], problem: 'cgroups of node n1 not removed: EACCES: permission denied' });
});

t.test('without a record (an agent without Pods, or one from before the record) it is still asked, and nothing is reported', async (t) => {
  const runDir = scratch(t);
  let called = 0;
  t.same(await removeLabNodeCgroups({ nodeName: 'n1', runDir }, async () => { called++; }), { removed: [], problem: null });
  t.equal(called, 1);
});
