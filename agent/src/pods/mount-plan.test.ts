import t from 'tap';
import { parseMountPoints, planMounts, renderSteps, resolvePath, type FsKind, type FsView, type MountOp } from './mount-plan.js';

/** A node's filesystem: paths with their kind, symlinks with their target. */
function fakeFs(entries: Record<string, FsKind | `-> ${string}`>): FsView {
  return {
    kind: (p) => {
      if (p === '/') return 'dir';
      const e = entries[p];
      if (e === undefined) return null;
      return e.startsWith('-> ') ? 'symlink' : (e as FsKind);
    },
    readlink: (p) => {
      const e = entries[p];
      if (!e?.startsWith('-> ')) throw new Error(`EINVAL ${p}`);
      return e.slice(3);
    },
  };
}

const POD = '/run/nodenet/kubelet/u1';
const STAGE = '/run/nodenet/kubelet/.stage';
const NODE = fakeFs({
  '/etc': 'dir', '/etc/hosts': 'file', '/etc/resolv.conf': 'file', '/var': 'dir', '/var/run': '-> ../run', '/run': 'dir', '/run/netns': 'dir',
  '/run/nodenet': 'dir', '/run/nodenet/kubelet': 'dir', [POD]: 'dir', [`${POD}/app`]: 'dir', [`${POD}/.pod`]: 'dir', [`${POD}/.pod/etc-hosts`]: 'file',
  [`${POD}/.pod/volumes/cm`]: 'dir', [`${POD}/.pod/volumes/sa`]: 'dir', [`${POD}/.pod/volumes/data`]: 'dir', [`${POD}/.pod/volumes/data/sub`]: 'dir', [STAGE]: 'dir',
  '/tmp': 'dir', '/tmp/existing': 'dir', '/proc': 'dir', '/dev': 'dir', '/etc/link': '-> /etc/missing/deeper', '/loop': '-> /loop',
});
const MOUNTS = ['/', '/proc', '/dev', '/dev/shm', '/run/netns', '/run/netns/nn-x'];
const base = { keep: [`${POD}/app`], mountPoints: MOUNTS, podDir: POD, stage: STAGE, workingDir: '/tmp', fs: NODE };
const hosts = { source: `${POD}/.pod/etc-hosts`, target: '/etc/hosts', kind: 'file' as const, readOnly: false };
const ops = (r: ReturnType<typeof planMounts>): readonly MountOp[] => (r.ok ? r.ops : []);
const F = '/proc/self/fd/3';

t.test('paths resolve through the node\'s symlinks down to what exists', async (t) => {
  t.same(resolvePath(NODE, '/var/run/secrets/kubernetes.io/serviceaccount'), { existing: '/run', rest: ['secrets', 'kubernetes.io', 'serviceaccount'], kind: 'dir' });
  t.same(resolvePath(NODE, '/etc/hosts'), { existing: '/etc/hosts', rest: [], kind: 'file' });
  t.same(resolvePath(NODE, '/etc/link'), { existing: '/etc', rest: ['missing', 'deeper'], kind: 'dir' }, 'a dangling symlink: its target is made');
  t.throws(() => resolvePath(NODE, '/etc/hosts/x'), /not a directory/);
  t.throws(() => resolvePath(NODE, '/loop/x'), /too many levels of symbolic links/);
});

t.test('existing targets: plain binds, no stage, no overlay; read-only after every bind; the working directory last', async (t) => {
  const r = planMounts({ ...base, mounts: [hosts, { source: `${POD}/.pod/volumes/cm`, target: '/tmp/existing', kind: 'dir', readOnly: true }] });
  t.same(ops(r), [
    { op: 'bind', source: `${POD}/.pod/etc-hosts`, target: '/etc/hosts' },
    { op: 'rbind', source: `${POD}/.pod/volumes/cm`, target: '/tmp/existing' },
    { op: 'ro', target: '/tmp/existing' },
    { op: 'cd', path: '/tmp' },
  ]);
});

t.test('a missing target on a directory with mounts below: an overlay in place, the mounts below stashed and moved back, sources from the stash, the run directory kept', async (t) => {
  const r = planMounts({ ...base, mounts: [hosts, { source: `${POD}/.pod/volumes/sa`, target: '/var/run/secrets/kubernetes.io/serviceaccount', kind: 'dir', readOnly: true }] });
  t.same(ops(r), [
    { op: 'stage', path: STAGE },
    { op: 'mkdir', path: `${F}/pod` },
    { op: 'rbind', source: POD, target: `${F}/pod` },
    { op: 'mkdir', path: `${F}/0/u` },
    { op: 'mkdir', path: `${F}/0/w` },
    { op: 'mkdir', path: `${F}/0/s0` },
    { op: 'rbind', source: '/run/netns', target: `${F}/0/s0` },
    { op: 'overlay', lower: '/run', upper: `${F}/0/u`, work: `${F}/0/w`, target: '/run' },
    { op: 'move', source: `${F}/0/s0`, target: '/run/netns' },
    { op: 'bind', source: `${F}/pod/.pod/etc-hosts`, target: '/etc/hosts' },
    { op: 'mkdir', path: '/run/secrets/kubernetes.io/serviceaccount' },
    { op: 'rbind', source: `${F}/pod/.pod/volumes/sa`, target: '/run/secrets/kubernetes.io/serviceaccount' },
    { op: 'bind', source: `${F}/pod/app`, target: `${POD}/app` },
    { op: 'ro', target: '/run/secrets/kubernetes.io/serviceaccount' },
    { op: 'unstage' },
    { op: 'cd', path: '/tmp' },
  ]);
});

t.test('a missing target under /: the overlay becomes the root, the node\'s top-level mounts bound into it, then pivot_root', async (t) => {
  const r = planMounts({ ...base, workingDir: '', mounts: [{ source: `${POD}/.pod/volumes/data`, target: '/data', kind: 'dir', readOnly: false }] });
  const R = `${F}/root`;
  t.same(ops(r), [
    { op: 'stage', path: STAGE },
    { op: 'mkdir', path: `${F}/pod` },
    { op: 'rbind', source: POD, target: `${F}/pod` },
    { op: 'mkdir', path: `${F}/0/u` },
    { op: 'mkdir', path: `${F}/0/w` },
    { op: 'mkdir', path: R },
    { op: 'overlay', lower: '/', upper: `${F}/0/u`, work: `${F}/0/w`, target: R },
    { op: 'rbind', source: '/dev', target: `${R}/dev` },
    { op: 'rbind', source: '/proc', target: `${R}/proc` },
    { op: 'rbind', source: '/run/netns', target: `${R}/run/netns` },
    { op: 'mkdir', path: `${R}/data` },
    { op: 'rbind', source: `${F}/pod/.pod/volumes/data`, target: `${R}/data` },
    { op: 'bind', source: `${F}/pod/app`, target: `${R}${POD}/app` },
    { op: 'pivot', root: R },
    { op: 'cd', path: '/' },
  ]);
});

t.test('one overlay for several targets under it; a target inside another volume is made in that volume', async (t) => {
  const r = planMounts({ ...base, keep: [], mounts: [
    { source: `${POD}/.pod/volumes/cm`, target: '/etc/app/conf', kind: 'dir', readOnly: true },
    { source: `${POD}/.pod/volumes/data`, target: '/etc/app', kind: 'dir', readOnly: false },
    { source: `${POD}/.pod/volumes/sa`, target: '/etc/app/sub', kind: 'dir', readOnly: false },
    { source: `${POD}/.pod/volumes/cm`, target: '/etc/other/x', kind: 'dir', readOnly: false },
  ] });
  const o = ops(r);
  t.same(o.filter((x) => x.op === 'overlay').map((x) => (x.op === 'overlay' ? x.lower : '')), ['/etc'], 'one overlay, on /etc (no mounts below it)');
  t.same(o.filter((x) => x.op === 'mkdir' && !x.path.startsWith(F)), [{ op: 'mkdir', path: '/etc/app' }, { op: 'mkdir', path: '/etc/app/conf' }, { op: 'mkdir', path: '/etc/other/x' }], '/etc/app/sub exists in the data volume: nothing made');
  const binds = o.filter((x) => x.op === 'rbind' && !x.target.startsWith(F)).map((x) => (x.op === 'rbind' ? x.target : ''));
  t.same(binds, ['/etc/app', '/etc/app/conf', '/etc/app/sub', '/etc/other/x'], 'parents first');
  t.same(o.filter((x) => x.op === 'ro'), [{ op: 'ro', target: '/etc/app/conf' }]);
});

t.test('refused: a file on a directory, a source outside the Pod, a path overlayfs cannot take', async (t) => {
  t.match(planMounts({ ...base, mounts: [{ ...hosts, target: '/tmp/existing' }] }), { ok: false, message: /cannot mount a file on \/tmp\/existing: it is a directory/ });
  t.match(planMounts({ ...base, mounts: [{ ...hosts, source: '/etc/passwd' }] }), { ok: false, message: /not under the Pod's directory/ });
  const fs = fakeFs({ '/a,b': 'dir' });
  t.match(planMounts({ ...base, fs, mountPoints: ['/'], keep: [], mounts: [{ source: `${POD}/x`, target: '/a,b/c', kind: 'dir', readOnly: false }] }), { ok: false, message: /overlayfs takes no ','/ });
});

t.test('the steps render as the script\'s arguments; mountinfo paths are decoded', async (t) => {
  t.same(renderSteps([{ op: 'stage', path: '/s' }, { op: 'overlay', lower: '/a', upper: '/u', work: '/w', target: '/a' }, { op: 'ro', target: '/a' }, { op: 'unstage' }, { op: 'cd', path: '/' }]),
    ['stage', '/s', 'overlay', '/a', '/u', '/w', '/a', 'ro', '/a', 'unstage', 'cd', '/']);
  t.same(parseMountPoints('22 1 8:1 / / rw - ext4 /dev/vda rw\n30 22 0:5 / /run/a\\040b rw - tmpfs tmpfs rw\n'), ['/', '/run/a b']);
});
