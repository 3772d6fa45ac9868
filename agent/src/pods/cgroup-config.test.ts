/**
 * The cgroup values the kubelet writes, against upstream's own cases
 * (kubernetes pkg/kubelet/cm/helpers_linux_test.go: TestMilliCPUToQuota,
 * TestResourceConfigForPod; cgroup_manager_linux.go's CpuSharesToCpuWeight;
 * kuberuntime_container_linux_test.go's TestCalculateLinuxResources), and
 * the mountinfo of this project's VMs (cgroup v1 hybrid) and of a cgroup v2
 * machine.
 */
import t from 'tap';
import { chooseLayout, containerConfig, cpuSharesToWeight, limitsSet, milliCPUToQuota, milliCPUToShares, parseCgroupMounts, parseOomKills, parseProcCgroup, podConfig, v1Files, v2Files } from './cgroup-config.js';

t.test('MilliCPUToQuota: milli × period / 1000, at least 1 ms; 0 is no quota (TestMilliCPUToQuota)', async (t) => {
  const cases: [number, number][] = [[0, 0], [5, 1000], [9, 1000], [10, 1000], [200, 20000], [500, 50000], [1000, 100000], [1500, 150000]];
  for (const [m, q] of cases) t.equal(milliCPUToQuota(m, 100000), q, `${m}m`);
  t.equal(milliCPUToQuota(100, 50000), 5000, 'scaled to the period');
});

t.test('MilliCPUToShares: 0 and tiny requests are the minimum 2, else ×1024/1000 (floor), capped at 262144', async (t) => {
  t.equal(milliCPUToShares(0), 2);
  t.equal(milliCPUToShares(1), 2);
  t.equal(milliCPUToShares(100), 102);
  t.equal(milliCPUToShares(1000), 1024);
  t.equal(milliCPUToShares(2500), 2560);
  t.equal(milliCPUToShares(300_000), 262144, 'capped');
});

t.test('cpu.weight from shares (CpuSharesToCpuWeight): 2→1, 102→4, 1024→39, 262144→10000', async (t) => {
  t.same([2, 102, 512, 1024, 262144].map(cpuSharesToWeight), [1, 4, 20, 39, 10000]);
});

t.test('a container: shares from the request (from the limit when none is set), quota from the limit, memory in bytes (calculateLinuxResources)', async (t) => {
  t.same(containerConfig({ requests: {}, limits: {} }), { cpuShares: 2, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null }, 'nothing set: minimum shares, no limit');
  t.same(containerConfig({ requests: { cpu: '100m' }, limits: { cpu: '100m', memory: '32Mi' } }), { cpuShares: 102, cpuQuota: 10000, cpuPeriod: 100000, memoryLimit: 33554432n });
  t.same(containerConfig({ requests: {}, limits: { cpu: '1' } }), { cpuShares: 1024, cpuQuota: 100000, cpuPeriod: 100000, memoryLimit: null }, 'no request: shares from the limit');
  t.same(containerConfig({ requests: { cpu: '250m', memory: '64Mi' }, limits: {} }), { cpuShares: 256, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null }, 'a memory request writes nothing');
  t.same(containerConfig({ requests: {}, limits: { cpu: '1m', memory: '1G' } }), { cpuShares: 2, cpuQuota: 1000, cpuPeriod: 100000, memoryLimit: 1_000_000_000n }, 'the minimum quota; decimal memory');
  t.equal(containerConfig({ requests: {}, limits: { cpu: '0.0001' } }).cpuQuota, 1000, 'a finer cpu rounds up to 1m (MilliValue)');
  t.equal(containerConfig({ requests: {}, limits: { memory: '1.5' } }).memoryLimit, 2n, 'memory rounds up to a byte (Value)');
});

t.test('a Pod (ResourceConfigForPod): BestEffort gets shares 2 only; otherwise shares from the summed requests, quota and memory only when every container has that limit', async (t) => {
  t.same(podConfig([{ requests: {}, limits: {} }, { requests: {}, limits: {} }]), { cpuShares: 2, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null }, 'BestEffort');
  const guaranteed = { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } };
  t.same(podConfig([guaranteed]), { cpuShares: 102, cpuQuota: 10000, cpuPeriod: 100000, memoryLimit: 104857600n }, 'Guaranteed');
  t.same(podConfig([guaranteed, { requests: { cpu: '200m', memory: '100Mi' }, limits: { cpu: '300m', memory: '200Mi' } }]), { cpuShares: 307, cpuQuota: 40000, cpuPeriod: 100000, memoryLimit: 314572800n }, 'Burstable, every limit declared: the sums');
  t.same(podConfig([guaranteed, { requests: { cpu: '200m' }, limits: {} }]), { cpuShares: 307, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null }, 'Burstable, one container without limits: no quota, no memory limit');
  t.same(podConfig([{ requests: {}, limits: { cpu: '500m' } }]), { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimit: null }, 'a request left to default reads as its limit');
  t.same(podConfig([{ requests: { memory: '1Mi' }, limits: {} }]), { cpuShares: 2, cpuQuota: null, cpuPeriod: 100000, memoryLimit: null }, 'a memory request alone: Burstable with the minimum shares');
});

t.test('the limits a container sets', async (t) => {
  t.same(limitsSet({ requests: { cpu: '1' }, limits: {} }), []);
  t.same(limitsSet({ requests: {}, limits: { memory: '32Mi', 'ephemeral-storage': '1Gi' } }), ['memory']);
  t.same(limitsSet({ requests: {}, limits: { cpu: '100m', memory: '32Mi' } }), ['cpu', 'memory']);
});

t.test('the files: v1 quota -1 and limit -1 when unlimited; v2 cpu.max "max 100000", memory.max max, memory.oom.group 1 for containers only', async (t) => {
  const limited = containerConfig({ requests: {}, limits: { cpu: '100m', memory: '32Mi' } });
  const open = containerConfig({ requests: {}, limits: {} });
  t.same(v1Files(limited), { cpu: [['cpu.shares', '102'], ['cpu.cfs_period_us', '100000'], ['cpu.cfs_quota_us', '10000']], memory: [['memory.limit_in_bytes', '33554432']] });
  t.same(v1Files(open), { cpu: [['cpu.shares', '2'], ['cpu.cfs_period_us', '100000'], ['cpu.cfs_quota_us', '-1']], memory: [['memory.limit_in_bytes', '-1']] });
  t.same(v2Files(limited, { container: true }), { cpu: [['cpu.weight', '4'], ['cpu.max', '10000 100000']], memory: [['memory.max', '33554432'], ['memory.oom.group', '1']] });
  t.same(v2Files(open, { container: false }), { cpu: [['cpu.weight', '1'], ['cpu.max', 'max 100000']], memory: [['memory.max', 'max']] });
});

// This project's VMs (Debian 12, kernel 6.18): v1 hierarchies, cgroup2 at /sys/fs/cgroup/unified without controllers.
const HYBRID = `25 1 0:23 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
27 25 0:25 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
28 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
29 25 0:27 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
30 25 0:28 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
31 25 0:29 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;
const UNIFIED = `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`;
// A Docker-style mount of a subtree, and cpu comounted with cpuacct.
const COMOUNT = `40 30 0:35 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
41 30 0:36 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
42 30 0:37 / /run/other/memory rw - cgroup cgroup rw,memory
`;

t.test('mountinfo: v1 controllers (the shortest mount point, whole hierarchies only), the cgroup2 mount', async (t) => {
  t.same(parseCgroupMounts(HYBRID), { v2: '/sys/fs/cgroup/unified', v1: { cpu: '/sys/fs/cgroup/cpu', cpuacct: '/sys/fs/cgroup/cpuacct', memory: '/sys/fs/cgroup/memory', pids: '/sys/fs/cgroup/pids' } });
  t.same(parseCgroupMounts(UNIFIED), { v2: '/sys/fs/cgroup', v1: {} });
  t.same(parseCgroupMounts(COMOUNT), { v2: null, v1: { cpu: '/sys/fs/cgroup/cpu,cpuacct', cpuacct: '/sys/fs/cgroup/cpu,cpuacct', memory: '/run/other/memory' } }, 'a subtree\'s bind mount is skipped');
});

t.test('the layout: v1 in a hybrid (its cgroup2 has no controllers); v2 when unified, each controller only if the root delegates it', async (t) => {
  t.same(chooseLayout(parseCgroupMounts(HYBRID), { controllers: '', subtreeControl: '' }), { version: 1, mounts: { cpu: '/sys/fs/cgroup/cpu', memory: '/sys/fs/cgroup/memory' }, missing: {} });
  t.same(chooseLayout(parseCgroupMounts(UNIFIED), { controllers: 'cpuset cpu io memory hugetlb pids rdma misc', subtreeControl: 'cpuset cpu io memory pids' }), { version: 2, mount: '/sys/fs/cgroup', controllers: ['cpu', 'memory'], missing: {} });
  const partial = chooseLayout(parseCgroupMounts(UNIFIED), { controllers: 'cpu memory pids', subtreeControl: 'memory pids' });
  t.match(partial, { version: 2, controllers: ['memory'], missing: { cpu: /does not enable cpu for its children \(\/sys\/fs\/cgroup\/cgroup.subtree_control\), and nodenet does not change it/ } });
  t.match(chooseLayout({ v2: null, v1: { cpu: '/c' } }, { controllers: null, subtreeControl: null }), { version: 1, mounts: { cpu: '/c' }, missing: { memory: 'no cgroup hierarchy with the memory controller is mounted' } });
  t.match(chooseLayout(parseCgroupMounts(HYBRID.replace(/.*rw,memory\n/, '')), { controllers: '', subtreeControl: '' }), { version: 1, missing: { memory: /no cgroup v1 hierarchy has the memory controller, and the cgroup v2 hierarchy at \/sys\/fs\/cgroup\/unified has none/ } });
});

t.test('oom_kill counts: v1 memory.oom_control (this kernel), v2 memory.events; absent on old kernels', async (t) => {
  t.equal(parseOomKills('oom_kill_disable 0\nunder_oom 0\noom_kill 3\n'), 3);
  t.equal(parseOomKills('low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n'), 1);
  t.equal(parseOomKills('oom_kill_disable 0\nunder_oom 0\n'), null);
});

t.test('/proc/self/cgroup: each v1 controller\'s path (comounted ones share it, name= hierarchies have none), the v2 path; a path outside the cgroup namespace left out', async (t) => {
  // This project's VMs, inside the sandbox that runs the tests: memory accounted under process_api.
  const vm = parseProcCgroup('9:name=systemd:/\n8:pids:/\n4:memory:/process_api/f3fd8f1084be5c6b976437fba509223e\n2:cpuacct:/\n1:cpu:/\n0::/\n');
  t.same(vm, { v1: { pids: '/', memory: '/process_api/f3fd8f1084be5c6b976437fba509223e', cpuacct: '/', cpu: '/' }, v2: '/' });
  t.same(parseProcCgroup('5:cpu,cpuacct:/system.slice/nodenet.service\n3:memory:/system.slice/nodenet.service\n'), { v1: { cpu: '/system.slice/nodenet.service', cpuacct: '/system.slice/nodenet.service', memory: '/system.slice/nodenet.service' }, v2: null });
  t.same(parseProcCgroup('0::/user.slice/a:b\n'), { v1: {}, v2: '/user.slice/a:b' }, 'a colon in the path');
  t.same(parseProcCgroup('4:memory:/../../x\n0::/..\n'), { v1: {}, v2: null });
});
