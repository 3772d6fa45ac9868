/**
 * The process runtime's mounts (root: real mount namespaces): what a
 * container sees, from inside (its own output), and what the node does not.
 * Each case runs a container whose command prints what it finds, then
 * checks the node: its mount table and its filesystem exactly as before.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { listSandboxes } from '../netns/pause-holder.js';
import { waitFor } from '../testing/wait.js';
import type { MountRequest, RunRecord } from './pod-runtime.js';
import { ProcessPodRuntime } from './runtime.js';

const tag = `nn-rtm-${process.pid}`;
const runDir = mkdtempSync(`/tmp/${tag}-run-`);
const binDir = mkdtempSync(`/tmp/${tag}-bin-`);
const pauseBin = join(binDir, 'nodenet-pause');
execFileSync('cc', ['-O2', '-Wall', '-Werror', '-o', pauseBin, new URL('../netns/pause.c', import.meta.url).pathname]);
const rt = new ProcessPodRuntime({ runDir, pauseBin });
/** The node's mounts that could be ours: under this test's directories, or made by the runtime (nodenet-* sources). Other tests' come and go. */
const ours = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => (l.includes(tag) && !l.includes(`${runDir}/netns/`)) || / nodenet-(stage|overlay|emptydir) /.test(l));

t.teardown(async () => {
  for (const s of listSandboxes(runDir)) await s.stop({ graceMs: 200 });
  rmSync(runDir, { recursive: true, force: true });
  rmSync(binDir, { recursive: true, force: true });
});

let n = 0;
async function run(script: string, mounts: (uid: string) => MountRequest[], o: { cwd?: string; keep?: boolean } = {}): Promise<{ uid: string; out: () => string; r: RunRecord; exit: () => Promise<number> }> {
  const uid = `${tag}-${n++}`;
  const { ref } = await rt.startSandbox(uid, 'm');
  t.teardown(async () => { await rt.stopSandbox(uid); rt.remove(uid); });
  await rt.mountMemory(ref, uid, 'mem', 4n << 20n);
  const r = await rt.startContainer(ref, { uid, container: 'c', run: 0, argv: ['/bin/sh', '-c', script], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }, cwd: o.cwd ?? null, mounts: mounts(uid), nowMs: 0 });
  const out = () => { try { return readFileSync(rt.logPath(uid, 'c', 0), 'utf8'); } catch { return ''; } };
  return {
    uid, r, out,
    exit: async () => {
      await waitFor(() => !rt.running(r), 'the container exited', { timeoutMs: 20_000, intervalMs: 20 });
      return rt.exitOf(uid, 'c', r).exitCode;
    },
  };
}
const payload = (o: Record<string, string>) => new Map(Object.entries(o).map(([k, v]) => [k, { data: Buffer.from(v), mode: 0o644 }]));

t.test('a missing mountPath under a directory with mounts below (/run): the volume there, read-only, updated in place; /etc/hosts; the node untouched', async (t) => {
  const uid0 = `${tag}-${n}`;
  rt.writeVolume(uid0, 'kubernetes.io~projected', 'sa', payload({ token: 'tok-1', namespace: 'app' }));
  const hosts = rt.writePodFile(uid0, 'etc-hosts', '# Kubernetes-managed hosts file.\n10.244.9.9\tm\n');
  const target = `/var/run/secrets/${tag}/serviceaccount`;
  const c = await run(`cat ${target}/token; echo; cat /etc/hosts | tail -1; touch ${target}/x 2>&1 | sed 's/.*Read-only.*/read-only/'; test -e /run/netns && echo netns-there; while [ "$(cat ${target}/token)" != tok-2 ]; do sleep 0.05; done; echo updated; exit 7`,
    (uid) => [{ volumeDir: rt.volumeDir(uid, 'kubernetes.io~projected', 'sa'), subPath: '', target, readOnly: true }, { volumeDir: hosts, subPath: '', target: '/etc/hosts', readOnly: false }]);
  await waitFor(() => c.out().includes('netns-there'), 'the container read its mounts', { timeoutMs: 10_000 });
  t.equal(c.out(), 'tok-1\n10.244.9.9\tm\nread-only\nnetns-there\n', 'the token, its own /etc/hosts, read-only, /run\'s mounts kept');
  t.notOk(existsSync(`/run/secrets/${tag}`), 'nothing made on the node');
  t.same(ours(), [], 'none of its mounts in the node\'s mount namespace (the sandbox\'s netns aside)');
  t.equal(readFileSync('/etc/hosts', 'utf8').includes('10.244.9.9'), false, 'the node\'s /etc/hosts as it was');
  t.ok(rt.writeVolume(c.uid, 'kubernetes.io~projected', 'sa', payload({ token: 'tok-2', namespace: 'app' })));
  t.equal(await c.exit(), 7, 'the update seen in place, and the exit status recorded under the overlay');
  t.match(c.out(), /updated\n$/);
});

t.test('a missing mountPath under / (root mode): an emptyDir with a subPath, a Memory emptyDir, the working directory; writes elsewhere stay in the container', async (t) => {
  const data = `/${tag}-data`;
  const c = await run(`pwd; echo hi > ${data}/f; cat /proc/self/mounts | grep -c " ${data}/mem tmpfs"; echo private > /${tag}-written; ls /proc/1/cmdline >/dev/null && echo proc-ok; exit 0`,
    (uid) => [{ volumeDir: rt.makeEmptyDir(uid, 'data'), subPath: 'sub', target: data, readOnly: false }, { volumeDir: rt.volumeDir(uid, 'kubernetes.io~empty-dir', 'mem'), subPath: '', target: `${data}/mem`, readOnly: false }], { cwd: data });
  t.equal(await c.exit(), 0, c.out());
  t.equal(c.out(), `${data}\n1\nproc-ok\n`);
  t.equal(readFileSync(join(rt.volumeDir(c.uid, 'kubernetes.io~empty-dir', 'data'), 'sub', 'f'), 'utf8'), 'hi\n', 'the emptyDir\'s subPath on the node');
  t.notOk(existsSync(data), 'no mountPath made on the node');
  t.same(ours(), [], 'the Memory emptyDir\'s tmpfs is the sandbox\'s, not the node\'s');
  t.notOk(existsSync(`/${tag}-written`), 'a write to the root stayed in the container');
});

t.test('a mount that cannot be made fails the start with mount\'s message; the node\'s mount table is as before', async (t) => {
  const uid = `${tag}-${n++}`;
  const { ref } = await rt.startSandbox(uid, 'm');
  t.teardown(async () => { await rt.stopSandbox(uid); rt.remove(uid); });
  const hosts = rt.writePodFile(uid, 'etc-hosts', 'x\n');
  await t.rejects(rt.startContainer(ref, { uid, container: 'c', run: 0, argv: ['true'], env: {}, cwd: null, mounts: [{ volumeDir: hosts, subPath: '', target: '/etc', readOnly: false }], nowMs: 0 }), /could not start container c: cannot mount a file on \/etc/);
  await t.rejects(rt.startContainer(ref, { uid, container: 'c', run: 0, argv: ['true'], env: {}, cwd: '/nonexistent-wd', mounts: [], nowMs: 0 }), /could not start container c: .*can't cd to \/nonexistent-wd/);
});

t.test('the node\'s mount table has none of it: no stage, overlay, tmpfs, nothing under the test\'s directories', async (t) => {
  for (const s of listSandboxes(runDir)) await s.stop({ graceMs: 200 });
  t.same(ours(), []);
  t.same(readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(runDir)), [], 'no netns mount left either');
});
