/**
 * The Pods' cgroups (cgroups.ts) on a cgroupfs in memory that refuses what
 * the kernel refuses (rmdir of a cgroup with processes or children, mkdir
 * under a missing parent or in a read-only hierarchy): the v2 layout (at the
 * root, wherever the agent is), which this project's VMs (cgroup v1) cannot
 * run, the v1 layouts (under the agent's own cgroup in each hierarchy), a
 * hierarchy nodenet may not write, the removal that waits for processes,
 * the sweep of a crashed run's cgroups (also where the record or the old
 * root placement has some), and removeNodeCgroups from another cgroup than
 * the agent's. runtime-cgroups.priv.test.ts runs the real thing (v1 here).
 */
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerConfig, parseProcCgroup, podConfig } from './cgroup-config.js';
import { CGROUPS_RECORD, nodeDirName, placementRecord, PodCgroups, removeNodeCgroups, type CgroupFs, type PlacementRecord } from './cgroups.js';

const err = (code: string, p: string) => Object.assign(new Error(`${code}: ${p}`), { code });
const parent = (p: string) => p.slice(0, p.lastIndexOf('/'));

class FakeCgroupFs implements CgroupFs {
  readonly dirs_ = new Set<string>();
  readonly files = new Map<string, string>();
  readonly writes: string[] = [];
  /** Hierarchies (mount points) where mkdir is refused. */
  readonly readOnly = new Set<string>();
  constructor(mounts: readonly string[], rootFiles: Record<string, string> = {}) {
    for (const m of mounts) this.dirs_.add(m);
    for (const [k, v] of Object.entries(rootFiles)) this.files.set(k, v);
  }
  read(p: string): string {
    const v = this.files.get(p);
    if (v === undefined) throw err('ENOENT', p);
    return v;
  }
  write(p: string, v: string): void {
    if (!this.dirs_.has(parent(p))) throw err('ENOENT', p);
    this.writes.push(`${p}=${v}`);
    if (!p.endsWith('/cgroup.procs')) this.files.set(p, v);
  }
  mkdir(p: string): void {
    if (this.dirs_.has(p)) return;
    if (!this.dirs_.has(parent(p))) throw err('ENOENT', p);
    if ([...this.readOnly].some((m) => p.startsWith(`${m}/`))) throw err('EACCES', p);
    this.dirs_.add(p);
    this.files.set(`${p}/cgroup.procs`, '');
    this.files.set(`${p}/memory.oom_control`, 'oom_kill_disable 0\nunder_oom 0\noom_kill 0\n');
    this.files.set(`${p}/memory.events`, 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n');
  }
  rmdir(p: string): void {
    if (!this.dirs_.has(p)) throw err('ENOENT', p);
    if (this.dirs(p).length || this.files.get(`${p}/cgroup.procs`)) throw err('EBUSY', p);
    this.dirs_.delete(p);
    for (const k of [...this.files.keys()]) if (parent(k) === p) this.files.delete(k);
  }
  dirs(p: string): string[] {
    return [...this.dirs_].filter((d) => parent(d) === p).map((d) => d.slice(p.length + 1));
  }
  written(dir: string): Record<string, string> {
    return Object.fromEntries(this.writes.filter((w) => parent(w.split('=')[0]!) === dir).map((w) => [w.split('=')[0]!.slice(dir.length + 1), w.split('=').slice(1).join('=')]));
  }
}

const HYBRID = `26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
27 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
31 25 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
`;
const UNIFIED = '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n';
/** The agent's /proc/self/cgroup: a path of its own in each v1 hierarchy (a sandbox that accounts memory, a service's cpu). */
const SELF = '9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/svc/agent\n0::/\n';
const CPU = '/sys/fs/cgroup/cpu/svc/agent/nodenet';
const MEM = '/sys/fs/cgroup/memory/process_api/abc/nodenet';
const V1_DIRS = ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/unified', '/sys/fs/cgroup/cpu/svc', '/sys/fs/cgroup/cpu/svc/agent', '/sys/fs/cgroup/memory/process_api', '/sys/fs/cgroup/memory/process_api/abc'];
const LAYOUT = { version: 1 as const, mounts: { cpu: '/sys/fs/cgroup/cpu', memory: '/sys/fs/cgroup/memory' }, missing: {} };
const LIMITED = { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '100m', memory: '32Mi' } };
const POD = podConfig([LIMITED]);
const CTR = containerConfig(LIMITED);

class MemRecord implements PlacementRecord {
  constructor(public text: string | null = null) {}
  load(): string | null { return this.text; }
  save(text: string | null): void { this.text = text; }
  dirs(): unknown { return this.text === null ? null : (JSON.parse(this.text) as { nodeDirs: unknown }).nodeDirs; }
}

/** mkdir -p under an existing mount. */
function mkdirs(fs: FakeCgroupFs, path: string): void {
  const parts = path.split('/');
  for (let i = 2; i <= parts.length; i++) {
    const p = parts.slice(0, i).join('/');
    if (!fs.dirs_.has(p) && fs.dirs_.has(parent(p))) fs.mkdir(p);
  }
}

t.test('the node\'s directory name: its name and a hash of the run directory (two labs\' node-1 differ), safe as a cgroup name', async (t) => {
  t.match(nodeDirName('node-1', '/run/nodenet/lab-a/node-1'), /^node-1-[0-9a-f]{8}$/);
  t.not(nodeDirName('node-1', '/run/a'), nodeDirName('node-1', '/run/b'));
  t.match(nodeDirName('a/b c', '/r'), /^a_b_c-[0-9a-f]{8}$/);
});

t.test('cgroup v2: at the root whatever the agent\'s cgroup (no internal processes); nodenet\'s own subtree_control enables cpu and memory down to the Pod; the values; one cgroup.procs', async (t) => {
  const fs = new FakeCgroupFs(['/sys/fs/cgroup', '/sys/fs/cgroup/process_api', '/sys/fs/cgroup/process_api/abc'], { '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids', '/sys/fs/cgroup/cgroup.subtree_control': 'cpu memory pids' });
  const cg = PodCgroups.detect({ node: 'n1-abc', fs, mountinfo: UNIFIED, procCgroup: '0::/process_api/abc\n' });
  t.same(cg.notEnforced, {});
  const { procs, oomKills } = cg.prepare('u1', 'app', POD, CTR);
  t.same(procs, ['/sys/fs/cgroup/nodenet/n1-abc/podu1/app/cgroup.procs']);
  t.same(fs.dirs('/sys/fs/cgroup/process_api/abc'), [], 'nothing under the agent\'s own cgroup');
  t.equal(oomKills, 0);
  t.same(fs.written('/sys/fs/cgroup/nodenet'), { 'cgroup.subtree_control': '+cpu +memory' });
  t.same(fs.written('/sys/fs/cgroup/nodenet/n1-abc'), { 'cgroup.subtree_control': '+cpu +memory' });
  t.same(fs.written('/sys/fs/cgroup/nodenet/n1-abc/podu1'), { 'cgroup.subtree_control': '+cpu +memory', 'cpu.weight': '4', 'cpu.max': '10000 100000', 'memory.max': '33554432' });
  t.same(fs.written('/sys/fs/cgroup/nodenet/n1-abc/podu1/app'), { 'cpu.weight': '4', 'cpu.max': '10000 100000', 'memory.max': '33554432', 'memory.oom.group': '1' });
  t.notOk(fs.writes.some((w) => w.startsWith('/sys/fs/cgroup/cgroup.')), 'the root\'s files are never written');
  fs.files.set('/sys/fs/cgroup/nodenet/n1-abc/podu1/app/memory.events', 'oom 1\noom_kill 1\n');
  t.equal(cg.oomKills('u1', 'app'), 1, 'memory.events');
});

t.test('cgroup v2 whose root does not delegate cpu: only memory is enforced, and why cpu is not is said', async (t) => {
  const fs = new FakeCgroupFs(['/sys/fs/cgroup'], { '/sys/fs/cgroup/cgroup.controllers': 'cpu memory', '/sys/fs/cgroup/cgroup.subtree_control': 'memory' });
  const cg = PodCgroups.detect({ node: 'n1', fs, mountinfo: UNIFIED, procCgroup: '0::/\n' });
  t.match(cg.notEnforced, { cpu: /does not enable cpu for its children/ });
  t.equal(cg.notEnforced.memory, undefined);
  cg.prepare('u1', 'app', POD, CTR);
  t.same(fs.written('/sys/fs/cgroup/nodenet/n1/podu1/app'), { 'memory.max': '33554432', 'memory.oom.group': '1' });
});

t.test('cgroup v1 (this project\'s VMs): under the agent\'s own cgroup in each hierarchy, both cgroup.procs, the v1 files; memory.oom_control counts', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS, { '/sys/fs/cgroup/unified/cgroup.controllers': '' });
  const cg = PodCgroups.detect({ node: 'n1', fs, mountinfo: HYBRID, procCgroup: SELF });
  t.same(cg.notEnforced, {});
  const { procs } = cg.prepare('u1', 'app', POD, CTR);
  t.same(procs, [`${CPU}/n1/podu1/app/cgroup.procs`, `${MEM}/n1/podu1/app/cgroup.procs`]);
  t.same([fs.dirs('/sys/fs/cgroup/cpu'), fs.dirs('/sys/fs/cgroup/memory')], [['svc'], ['process_api']], 'nothing at the hierarchies\' roots');
  t.same(fs.written(`${CPU}/n1/podu1/app`), { 'cpu.shares': '102', 'cpu.cfs_period_us': '100000', 'cpu.cfs_quota_us': '10000' });
  t.same(fs.written(`${MEM}/n1/podu1/app`), { 'memory.limit_in_bytes': '33554432' });
  t.same(fs.written(`${MEM}/n1/podu1`), { 'memory.limit_in_bytes': '33554432' });
  t.notOk(fs.writes.some((w) => w.includes('subtree_control')), 'no subtree_control in v1');
  t.ok(fs.writes.indexOf(`${CPU}/n1/podu1/cpu.cfs_quota_us=10000`) < fs.writes.indexOf(`${CPU}/n1/podu1/app/cpu.cfs_quota_us=10000`), 'the Pod before its container (a child\'s quota may not exceed its parent\'s)');
  fs.files.set(`${MEM}/n1/podu1/app/memory.oom_control`, 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n');
  t.equal(cg.oomKills('u1', 'app'), 2);
  t.equal(cg.oomKills('other', 'app'), null, 'no cgroup: unknown');
  const atRoot = PodCgroups.detect({ node: 'n2', fs, mountinfo: HYBRID, procCgroup: '4:memory:/\n1:cpu,cpuacct:/\n' });
  t.same(atRoot.prepare('u2', 'app', POD, CTR).procs, ['/sys/fs/cgroup/cpu/nodenet/n2/podu2/app/cgroup.procs', '/sys/fs/cgroup/memory/nodenet/n2/podu2/app/cgroup.procs'], 'an agent in the root cgroups: at the roots');
});

t.test('a hierarchy nodenet may not write: its controller is not enforced (with the error), the other is', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS);
  fs.readOnly.add('/sys/fs/cgroup/memory/process_api/abc');
  const cg = PodCgroups.detect({ node: 'n1', fs, mountinfo: HYBRID, procCgroup: SELF });
  t.match(cg.notEnforced, { memory: /^cannot make \/sys\/fs\/cgroup\/memory\/process_api\/abc\/nodenet\/n1: EACCES/ });
  t.equal(cg.notEnforced.cpu, undefined);
  t.same(cg.prepare('u1', 'app', POD, CTR).procs, [`${CPU}/n1/podu1/app/cgroup.procs`]);
  t.equal(cg.oomKills('u1', 'app'), null, 'no memory cgroup: no OOM count');
  const none = PodCgroups.detect({ node: 'n1', fs: new FakeCgroupFs([]), mountinfo: '' });
  t.same(Object.keys(none.notEnforced).sort(), ['cpu', 'memory'], 'no cgroupfs at all');
  t.same(none.prepare('u1', 'app', POD, CTR), { procs: [], oomKills: null }, 'a container then starts in no cgroup');
});

t.test('a value the kernel refuses fails the container\'s start with the file and the value', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS);
  const cg = PodCgroups.detect({ node: 'n1', fs, mountinfo: HYBRID, procCgroup: SELF });
  fs.write = (p) => { throw err('EINVAL', p); };
  t.throws(() => cg.prepare('u1', 'app', POD, CTR), { name: 'NodenetError', code: 'NN_ERR_POD', message: /^could not set up the cgroup of container app: writing 102 to \/sys\/fs\/cgroup\/cpu\/svc\/agent\/nodenet\/n1\/podu1\/cpu.shares: EINVAL/ });
});

t.test('another agent removing the empty nodenet between the two mkdirs: made again', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS);
  const mkdir = fs.mkdir.bind(fs);
  let raced = 0;
  fs.mkdir = (p) => {
    if (p === `${MEM}/n1` && !raced++) fs.rmdir(MEM);
    mkdir(p);
  };
  const cg = PodCgroups.detect({ node: 'n1', fs, mountinfo: HYBRID, procCgroup: SELF });
  t.equal(raced, 2, 'the race happened once, then the node\'s directory was made');
  t.same(cg.notEnforced, {});
  t.same(fs.dirs(MEM), ['n1']);
});

t.test('removePod waits for the processes to go, SIGKILLs those left after the drain time, removes bottom-up, the node\'s directory and nodenet once empty', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS);
  const killed: number[] = [];
  let ticks = 0;
  const cg = new PodCgroups({ layout: LAYOUT, self: parseProcCgroup(SELF), node: 'n1', fs, kill: (pid) => killed.push(pid), drainMs: 100, sleep: async () => {
    // nsenter follows its child out after a few ticks; pid 66 never goes on its own.
    if (++ticks === 3) fs.files.set(`${CPU}/n1/podu1/app/cgroup.procs`, '66\n');
    if (killed.includes(66)) fs.files.set(`${CPU}/n1/podu1/app/cgroup.procs`, '');
  } });
  cg.prepare('u1', 'app', POD, CTR);
  cg.prepare('u1', 'side', POD, containerConfig({ requests: {}, limits: {} }));
  cg.prepare('u2', 'app', POD, CTR);
  fs.files.set(`${CPU}/n1/podu1/app/cgroup.procs`, '55\n66\n');
  t.ok(await cg.removePod('u1'));
  t.same(killed, [66], 'only what outlived the drain time');
  t.same(fs.dirs(`${CPU}/n1`), ['podu2']);
  t.same(fs.dirs(`${MEM}/n1`), ['podu2']);
  t.ok(await cg.removePod('u1'), 'idempotent');
  t.ok(await cg.removePod('u2'));
  t.same(fs.dirs('/sys/fs/cgroup/cpu/svc/agent'), [], 'the node\'s directory and nodenet went with its last Pod: nothing left in the agent\'s cgroup');
  t.same(fs.dirs('/sys/fs/cgroup/memory/process_api/abc'), []);
  cg.prepare('u3', 'app', POD, CTR);
  t.same(fs.dirs(`${MEM}/n1`), ['podu3'], 'made again for the next Pod');
});

t.test('sweep: the Pods\' cgroups of this node that no kept Pod has go; kept ones and other nodes\' stay', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS);
  const self = parseProcCgroup(SELF);
  const mine = new PodCgroups({ layout: LAYOUT, self, node: 'n1', fs, kill: () => undefined, sleep: async () => undefined });
  const other = new PodCgroups({ layout: LAYOUT, self, node: 'n2', fs });
  mine.prepare('kept', 'app', POD, CTR);
  mine.prepare('crashed', 'app', POD, CTR);
  other.prepare('theirs', 'app', POD, CTR);
  t.same((await mine.sweep(new Set(['kept']))).sort(), ['crashed']);
  t.same(fs.dirs(CPU).sort(), ['n1', 'n2']);
  t.same(fs.dirs(`${CPU}/n1`), ['podkept']);
  t.same(fs.dirs(`${MEM}/n2`), ['podtheirs'], 'another node\'s Pods are not this agent\'s');
  t.same(await mine.sweep(new Set()), ['kept']);
  t.same(fs.dirs(CPU), ['n2']);
});

t.test('the record: the node\'s directories as made; the sweep at start also where an earlier run recorded some (killing its leftovers) and at the roots (only empty ones); a record\'s foreign paths ignored', async (t) => {
  const fs = new FakeCgroupFs(V1_DIRS);
  const OLD = '/sys/fs/cgroup/memory/process_api/old/nodenet/n1';
  mkdirs(fs, `${OLD}/podcrashed/app`);
  fs.files.set(`${OLD}/podcrashed/app/cgroup.procs`, '55\n');
  mkdirs(fs, `${OLD}/podkept/app`);
  fs.files.set(`${OLD}/podkept/app/cgroup.procs`, '56\n');
  mkdirs(fs, '/sys/fs/cgroup/memory/nodenet/n1/podempty/app');
  mkdirs(fs, '/sys/fs/cgroup/memory/nodenet/n1/podbusy/app');
  fs.files.set('/sys/fs/cgroup/memory/nodenet/n1/podbusy/app/cgroup.procs', '66\n');
  mkdirs(fs, `${MEM}/n2/podx/app`);
  fs.files.set(`${MEM}/n2/podx/app/cgroup.procs`, '99\n');
  mkdirs(fs, '/sys/fs/cgroup/memory/x/nodenet/n1/pody/app');
  fs.files.set('/sys/fs/cgroup/memory/x/nodenet/n1/pody/app/cgroup.procs', '98\n');
  const record = new MemRecord(JSON.stringify({ nodeDirs: [OLD, `${MEM}/n2`, '/tmp/nodenet/n1', '/sys/fs/cgroup/memory/x/../x/nodenet/n1', 7] }));
  const killed: number[] = [];
  const cg = PodCgroups.detect({ node: 'n1', fs, mountinfo: HYBRID, procCgroup: SELF, record, kill: (pid) => { killed.push(pid); fs.files.set(`${OLD}/podcrashed/app/cgroup.procs`, ''); }, sleep: async () => undefined, drainMs: 100 });
  t.same(record.dirs(), [`${CPU}/n1`, `${MEM}/n1`, OLD], 'recorded as made, the earlier run\'s kept until swept; foreign paths dropped');
  t.same((await cg.sweep(new Set(['kept']))).sort(), ['crashed', 'empty']);
  t.same(killed, [55], 'the recorded run\'s leftover is killed; nothing at the roots, in another node\'s or in an unrecorded directory');
  t.same(fs.dirs(OLD), ['podkept']);
  t.same(fs.dirs('/sys/fs/cgroup/memory/nodenet/n1'), ['podbusy'], 'at the root, the empty Pod directory went, the busy one stays');
  t.same(fs.dirs(`${MEM}/n2`), ['podx']);
  t.same(fs.dirs('/sys/fs/cgroup/memory/x/nodenet/n1'), ['pody']);
  t.same(record.dirs(), [`${CPU}/n1`, `${MEM}/n1`, OLD]);
  fs.files.set(`${OLD}/podkept/app/cgroup.procs`, '');
  t.ok(await cg.removePod('kept'), 'an adopted Pod\'s cgroups go from where the earlier run made them');
  t.same(fs.dirs('/sys/fs/cgroup/memory/process_api/old'), [], 'with that run\'s node directory and nodenet');
  t.same(record.dirs(), [`${CPU}/n1`, `${MEM}/n1`], 'and out of the record');
});

t.test('removeNodeCgroups, from another cgroup than the agent\'s: finds the node\'s directories in the record, removes them and the record, makes nothing; without a record, at the roots, killing nothing there', async (t) => {
  const runDir = mkdtempSync(join(tmpdir(), 'nn-cgroups-'));
  t.teardown(() => rmSync(runDir, { recursive: true, force: true }));
  const fs = new FakeCgroupFs(V1_DIRS);
  const node = nodeDirName('node-1', runDir);
  const agent = PodCgroups.detect({ node, fs, mountinfo: HYBRID, procCgroup: SELF, record: placementRecord(runDir) });
  t.same(JSON.parse(readFileSync(join(runDir, CGROUPS_RECORD), 'utf8')), { nodeDirs: [`${CPU}/${node}`, `${MEM}/${node}`] }, 'the agent recorded where it made them');
  agent.prepare('u1', 'app', POD, CTR);
  fs.files.set(`${MEM}/${node}/podu1/app/cgroup.procs`, '77\n');
  const killed: number[] = [];
  const lab = { fs, mountinfo: HYBRID, procCgroup: '4:memory:/lab\n1:cpu,cpuacct:/\n', sleep: async () => undefined, drainMs: 100 };
  await removeNodeCgroups('node-1', runDir, { ...lab, kill: (pid) => { killed.push(pid); fs.files.set(`${MEM}/${node}/podu1/app/cgroup.procs`, ''); } });
  t.same(killed, [77], 'a process left in the node\'s recorded cgroup is killed');
  t.same([fs.dirs('/sys/fs/cgroup/cpu/svc/agent'), fs.dirs('/sys/fs/cgroup/memory/process_api/abc')], [[], []], 'all gone from the agent\'s cgroups');
  t.same([fs.dirs('/sys/fs/cgroup/cpu'), fs.dirs('/sys/fs/cgroup/memory')], [['svc'], ['process_api']], 'nothing made, at the roots or in the caller\'s cgroup');
  t.notOk(existsSync(join(runDir, CGROUPS_RECORD)), 'the record went with them');

  // An agent from before the record: at the roots.
  const old = new PodCgroups({ layout: LAYOUT, node, fs });
  old.prepare('u2', 'app', POD, CTR);
  old.prepare('u3', 'app', POD, CTR);
  fs.files.set(`/sys/fs/cgroup/cpu/nodenet/${node}/podu3/app/cgroup.procs`, '88\n');
  await removeNodeCgroups('node-1', runDir, { ...lab, kill: (pid) => killed.push(pid) });
  t.same(killed, [77], 'nothing killed outside a recorded directory');
  t.same(fs.dirs(`/sys/fs/cgroup/cpu/nodenet/${node}`), ['podu3'], 'the busy Pod\'s stays (waited for, not killed)');
  t.same(fs.dirs('/sys/fs/cgroup/memory'), ['process_api'], 'its empty memory cgroup went, with the node\'s directory and nodenet');
  fs.files.set(`/sys/fs/cgroup/cpu/nodenet/${node}/podu3/app/cgroup.procs`, '');
  await removeNodeCgroups('node-1', runDir, lab);
  t.same([fs.dirs('/sys/fs/cgroup/cpu'), fs.dirs('/sys/fs/cgroup/memory')], [['svc'], ['process_api']], 'the rest once its processes went');
  writeFileSync(join(runDir, CGROUPS_RECORD), 'not json');
  await t.resolves(removeNodeCgroups('node-1', runDir, lab), 'a damaged record is no record');
});
