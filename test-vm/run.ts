/**
 * test-vm/run.ts: the VM stage (`npm run test:vm`). Builds the image once
 * (build-image.sh, cached by a hash of its inputs), snapshots dist/ and
 * bundles the guest side of the suites into it, then runs each suite of
 * test-vm/suites/: 2 or 3 qemu VMs linked by `-netdev stream` over unix
 * sockets (no host interface, firewall or sysctl is touched), each under
 * `timeout`, passing when every VM prints a pass result line on its serial
 * console. A failed suite's serial logs are printed and kept; everything
 * of a passing run is removed.
 *
 *   node --import tsx test-vm/run.ts [--accel auto|kvm|tcg] [--suite a,b | --all] [--keep] [--list]
 *
 * Runs live in $NODENET_VM_RUN_ROOT (default /tmp/nodenet-test-vm)/<tag>, with owner.json (lab/owner.ts) and
 * processes.json: at start, leftovers whose owner died are killed and removed, never a live run's.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, copyFileSync, openSync, closeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { ownerAlive, readOwner, readProcesses, recordProcess, writeOwner } from '../agent/src/lab/owner.js';
import { isAlive } from '../agent/src/netns/proc.js';
import { K8S_MAJOR, K8S_MINOR } from '../controlplane/api/discovery.js';
import { cables, encodeFrame, FrameReader, imageFileNames, imageKey, parseResult, qemuArgv, switchPorts, vmIP, VM_PREFIX, type Accel, type VmResult } from './qemu.js';
import { suitesOf, type VmSuite } from './suite.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const REPO = fileURLToPath(new URL('..', import.meta.url));
const QEMU = 'qemu-system-x86_64';
/** The provisioning files the image is built from (build-image.sh hashes the same list). */

interface Options { accel: 'auto' | Accel; suites: string[] | null; all: boolean; keep: boolean; list: boolean; params: string[]; shareOut: string | null; timeoutSec: number | null }

function parseArgs(argv: readonly string[]): Options {
  const o: Options = { accel: 'auto', suites: null, all: false, keep: false, list: false, params: [], shareOut: null, timeoutSec: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = () => { const v = argv[++i]; if (v === undefined) throw new Error(`${a} needs a value`); return v; };
    if (a === '--accel') { const v = val(); if (v !== 'auto' && v !== 'kvm' && v !== 'tcg') throw new Error(`--accel ${v}: auto, kvm or tcg`); o.accel = v; }
    else if (a === '--suite') o.suites = val().split(',').filter(Boolean);
    else if (a === '--all') o.all = true;
    else if (a === '--keep') o.keep = true;
    else if (a === '--list') o.list = true;
    else if (a === '--param') {
      // A suite's parameter (GuestContext.params), on the guests' kernel command line: no spaces.
      const v = val();
      if (!/^[a-z][a-z0-9-]*=[^\s]+$/.test(v)) throw new Error(`--param ${v}: expected key=value, without spaces`);
      o.params.push(v);
    } else if (a === '--share-out') o.shareOut = val();
    else if (a === '--timeout') { const v = Number(val()); if (!Number.isInteger(v) || v < 10) throw new Error('--timeout: whole seconds, at least 10'); o.timeoutSec = v; }
    else throw new Error(`unknown argument ${a}\nusage: ${USAGE}`);
  }
  return o;
}

const USAGE = 'test-vm/run.ts [--accel auto|kvm|tcg] [--suite a,b | --all] [--keep] [--list] [--param key=value ...] [--share-out DIR] [--timeout S]';
const say = (s: string) => process.stdout.write(`test-vm: ${s}\n`);
/**
 * How much the guests stretch their timeouts (never their pass conditions): 5 under TCG alone; .ci/run, whose VMs
 * share the CPUs with npm test at idle priority, asks for more with NODENET_VM_TIME_SCALE.
 */
function timeScale(): number {
  const v = Number(process.env['NODENET_VM_TIME_SCALE'] ?? 5);
  if (!Number.isFinite(v) || v < 1) throw new Error(`NODENET_VM_TIME_SCALE must be a number >= 1, got ${process.env['NODENET_VM_TIME_SCALE']}`);
  return v;
}

async function loadSuites(): Promise<{ file: string; suite: VmSuite }[]> {
  const out: { file: string; suite: VmSuite }[] = [];
  for (const f of readdirSync(`${HERE}suites`).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts')).sort()) {
    const mod = (await import(`${HERE}suites/${f}`)) as Parameters<typeof suitesOf>[0];
    for (const s of suitesOf(mod)) out.push({ file: f.replace(/\.ts$/, ''), suite: s });
  }
  return out;
}

/**
 * KVM when it really boots a kernel here, else TCG. /dev/kvm existing is not enough: on a nested host `-cpu host`
 * can abort (an MSR qemu cannot set) or hang with no output. The probe boots the image's kernel with an init that
 * exits at once and looks for the kernel's banner on the serial console within 20 s.
 */
function detectAccel(image: string, dir: string): { accel: Accel; why: string } {
  if (!existsSync('/dev/kvm')) return { accel: 'tcg', why: 'no /dev/kvm' };
  const log = `${dir}/kvm-probe.serial.log`;
  const argv = qemuArgv({ index: 1, kernel: `${image}/vmlinuz`, initrd: `${image}/initrd.img`, rootfs: `${image}/rootfs.ext4`, serialLog: log,
    accel: 'kvm', memoryMiB: 256, cpus: 1, nic: { socket: `${dir}/kvm-probe.sock`, server: true }, shares: [], append: ['rdinit=/bin/false'] });
  const r = spawnSync('timeout', ['-s', 'KILL', '20', QEMU, ...argv], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  const banner = existsSync(log) && readFileSync(log, 'utf8').includes('Linux version');
  rmSync(log, { force: true });
  rmSync(`${dir}/kvm-probe.sock`, { force: true });
  if (banner) return { accel: 'kvm', why: 'the KVM probe booted' };
  return { accel: 'tcg', why: `the KVM probe did not boot (${r.status === 137 || r.signal ? 'no output in 20 s' : (r.stderr.trim().split('\n')[0] ?? `exit ${r.status}`)})` };
}

/** Kills and removes the runs whose owner is gone (a crashed runner); a live run is left alone. */
function cleanLeftovers(root: string): void {
  if (!existsSync(root)) return;
  for (const name of readdirSync(root)) {
    const dir = `${root}/${name}`;
    const owner = readOwner(dir);
    if (owner && ownerAlive(owner)) continue;
    if (!owner && Date.now() - statSync(dir).mtimeMs < 3_600_000) continue; // being created right now, or not ours
    for (const p of readProcesses(dir)) {
      if (isAlive(p.pid, p.startTime)) { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } }
    }
    rmSync(dir, { recursive: true, force: true });
    say(`removed the leftovers of a crashed run: ${dir}`);
  }
}

function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function kernelPackage(): string {
  const dep = spawnSync('apt-cache', ['depends', 'linux-image-amd64'], { encoding: 'utf8' }).stdout;
  const pkg = /Depends: (linux-image-\d\S*-amd64)/.exec(dep)?.[1];
  if (!pkg) throw new Error('cannot resolve linux-image-amd64 with apt-cache (apt-get update?)');
  const ver = /^Version: (\S+)/m.exec(spawnSync('apt-cache', ['show', pkg], { encoding: 'utf8' }).stdout)?.[1] ?? '';
  return `${pkg} ${ver}`;
}

/** Builds (or finds) the image; returns its directory. */
function ensureImage(): { dir: string; seconds: number; cached: boolean } {
  const files = imageFileNames(readdirSync(`${HERE}image`))
    .map((name) => ({ name, content: readFileSync(`${HERE}${name}`) }));
  const mirror = process.env['NODENET_VM_MIRROR'] ?? 'http://deb.debian.org/debian';
  const key = imageKey({ files, kernel: kernelPackage(), nodeSha256: sha256File(process.execPath), mirror });
  const cache = process.env['NODENET_VM_CACHE'] ?? '/var/cache/nodenet-test-vm';
  const t0 = Date.now();
  const cached = existsSync(`${cache}/${key}/ready`);
  const r = spawnSync('bash', [`${HERE}build-image.sh`], {
    env: { ...process.env, NODENET_VM_KEY: key, NODENET_VM_CACHE: cache, NODENET_NODE_BINARY: process.execPath },
    stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', timeout: 30 * 60_000,
  });
  if (r.status !== 0) throw new Error(`build-image.sh failed (${r.status ?? r.signal})`);
  const dir = r.stdout.trim().split('\n').pop()!;
  return { dir, seconds: (Date.now() - t0) / 1000, cached };
}

/**
 * The host's kubectl as one static binary for a guest: the build for nodenet's API minor version when
 * `kubectl` is a version dispatcher with kubectl.1.N siblings (this machine's google-cloud-sdk one),
 * else kubectl itself. Throws when there is none.
 */
function hostKubectl(): string {
  const r = spawnSync('sh', ['-c', 'readlink -f "$(command -v kubectl)"'], { encoding: 'utf8' });
  const path = r.stdout.trim();
  if (r.status !== 0 || !path) throw new Error('a suite needs kubectl and the host has none on PATH');
  const matching = `${path.replace(/\/[^/]*$/, '')}/kubectl.${K8S_MAJOR}.${K8S_MINOR}`;
  return existsSync(matching) ? matching : path;
}

/** dist/ as it is now, plus the bundled guest side: what every VM of this run mounts over /nodenet/dist. */
async function snapshotDist(runDir: string, withKubectl = false): Promise<string> {
  const dist = `${runDir}/dist`;
  // NODENET_VM_DIST: a copy of dist/ to take instead (.ci/run rebuilds dist/ for npm test while the VMs start).
  const from = process.env['NODENET_VM_DIST'] ?? `${REPO}dist`;
  if (!existsSync(`${from}/nodenet.js`)) throw new Error(`${from}/nodenet.js is missing: npm run build first`);
  cpSync(from, dist, { recursive: true, filter: (src) => !src.endsWith('.map') });
  mkdirSync(`${dist}/vm`, { recursive: true });
  await build({
    entryPoints: [`${HERE}guest/main.ts`], outfile: `${dist}/vm/guest.mjs`,
    bundle: true, platform: 'node', target: 'node20', format: 'esm', logLevel: 'warning',
    // One file over 9p, not node_modules' thousands; tap's place is taken by the subset the suites use.
    external: ['better-sqlite3', 'koffi', 'netlink'], alias: { tap: `${HERE}guest/tap-lite.ts` },
    banner: { js: "import { createRequire as __nodenetCreateRequire } from 'node:module'; const require = __nodenetCreateRequire(import.meta.url);" },
  });
  if (withKubectl) {
    mkdirSync(`${dist}/vm/bin`, { recursive: true });
    copyFileSync(hostKubectl(), `${dist}/vm/bin/kubectl`);
    chmodSync(`${dist}/vm/bin/kubectl`, 0o755);
  }
  copyFileSync(`${HERE}guest/boot.sh`, `${dist}/vm/boot.sh`);
  cpSync(`${HERE}provision`, `${dist}/vm/provision`, { recursive: true });
  return dist;
}

/** The switch for 3+ VMs: one unix socket per VM speaking qemu's stream framing, MAC learning, flooding the rest. */
function startSwitch(sockets: readonly string[]): { close(): void } {
  const table = new Map<string, number>();
  const conns = new Map<number, Socket>();
  const servers: Server[] = [];
  const ports = sockets.map((_, i) => i);
  sockets.forEach((path, port) => {
    const server = createServer((c) => {
      conns.get(port)?.destroy();
      conns.set(port, c);
      const reader = new FrameReader();
      c.on('data', (d: Buffer) => {
        let frames: Buffer[];
        try { frames = reader.push(d); } catch { c.destroy(); return; }
        for (const f of frames) {
          for (const to of switchPorts(f, port, ports, table)) conns.get(to)?.write(encodeFrame(f));
        }
      });
      c.on('error', () => c.destroy());
      c.on('close', () => { if (conns.get(port) === c) conns.delete(port); });
    });
    server.listen(path);
    servers.push(server);
  });
  return { close: () => { for (const c of conns.values()) c.destroy(); for (const s of servers) s.close(); } };
}

interface Vm { index: number; proc: ChildProcess; log: string; exited: boolean }

async function runSuite(s: { file: string; suite: VmSuite }, image: string, dist: string, runDir: string, accel: Accel, opts: Options): Promise<{ pass: boolean; seconds: number; results: (VmResult | null)[]; dir: string }> {
  const { suite } = s;
  const dir = `${runDir}/${suite.name}`;
  const share = `${dir}/share`;
  mkdirSync(share, { recursive: true });
  const { nics, switchSockets } = cables(suite.vms, dir);
  const sw = switchSockets.length ? startSwitch(switchSockets) : null;
  // A stretched run (NODENET_VM_TIME_SCALE above the default 5) gets its qemu limit stretched alike.
  const timeoutSec = opts.timeoutSec ?? Math.round(suite.timeoutSec[accel] * Math.max(1, timeScale() / 5));
  const t0 = Date.now();
  const vms: Vm[] = [];
  try {
    for (let i = 1; i <= suite.vms; i++) {
      const log = `${dir}/vm${i}.serial.log`;
      writeFileSync(log, '');
      const argv = qemuArgv({
        index: i, kernel: `${image}/vmlinuz`, initrd: `${image}/initrd.img`, rootfs: `${image}/rootfs.ext4`, serialLog: log,
        accel, memoryMiB: suite.memoryMiB ?? 1024, cpus: 2, nic: nics[i - 1]!,
        shares: [{ tag: 'repo', path: REPO.replace(/\/$/, ''), readonly: true }, { tag: 'dist', path: dist, readonly: true }, { tag: 'share', path: share, readonly: false }],
        append: [`nodenet.suite=${suite.name}`, `nodenet.file=${s.file}`, `nodenet.vm=${i}`, `nodenet.vms=${suite.vms}`, `nodenet.ip=${vmIP(i)}/${VM_PREFIX}`, `nodenet.timescale=${timeScale()}`, `nodenet.param.accel=${accel}`, ...(suite.init === 'systemd' ? ['nodenet.init=systemd'] : []), ...opts.params.map((p) => `nodenet.param.${p}`)],
      });
      const out = openSync(`${dir}/vm${i}.qemu.log`, 'a');
      // `timeout` kills qemu even if this process dies; detached: its own process group, killed as one.
      const proc = spawn('timeout', ['-s', 'KILL', String(timeoutSec), QEMU, ...argv], { stdio: ['ignore', out, out], detached: true });
      closeSync(out);
      const vm: Vm = { index: i, proc, log, exited: false };
      proc.on('exit', () => { vm.exited = true; });
      vms.push(vm);
      if (proc.pid) recordProcess(runDir, `qemu ${suite.name} vm${i}`, proc.pid);
      // The direct cable: VM2 connects to the socket VM1 listens on, so VM1's must exist first.
      if (i === 1 && !switchSockets.length && suite.vms > 1) {
        const deadline = Date.now() + 20_000;
        while (!existsSync(nics[0]!.socket)) {
          if (vm.exited || Date.now() > deadline) throw new Error(`vm1 did not open ${nics[0]!.socket}: ${readFileSync(`${dir}/vm1.qemu.log`, 'utf8')}`);
          await sleep(20);
        }
      }
    }
    const results: (VmResult | null)[] = vms.map(() => null);
    for (;;) {
      vms.forEach((vm, i) => { results[i] ??= parseResult(readFileSync(vm.log, 'utf8')); });
      if (results.every((r) => r !== null) || results.some((r) => r && !r.pass)) break;
      if (vms.some((vm, i) => vm.exited && results[i] === null)) {
        await sleep(300);
        vms.forEach((vm, i) => { results[i] ??= parseResult(readFileSync(vm.log, 'utf8')); });
        break;
      }
      if (Date.now() - t0 > timeoutSec * 1000) break;
      await sleep(250);
    }
    const pass = results.every((r) => r?.pass === true);
    return { pass, seconds: (Date.now() - t0) / 1000, results, dir };
  } finally {
    for (const vm of vms) {
      if (!vm.exited && vm.proc.pid) { try { process.kill(-vm.proc.pid, 'SIGKILL'); } catch { /* gone */ } }
    }
    for (const vm of vms) {
      const deadline = Date.now() + 10_000;
      while (!vm.exited && Date.now() < deadline) await sleep(20);
    }
    sw?.close();
  }
}

function printLogs(dir: string): void {
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.log')).sort()) {
    const text = readFileSync(`${dir}/${f}`, 'utf8');
    const lines = text.split('\n');
    const shown = lines.length > 400 ? [`... (${lines.length - 400} earlier lines in ${dir}/${f})`, ...lines.slice(-400)] : lines;
    process.stdout.write(`----- ${dir}/${f} -----\n${shown.join('\n')}\n`);
  }
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const all = await loadSuites();
  if (opts.list) {
    for (const s of all) say(`${s.suite.name} (${s.suite.vms} VMs, test-vm/suites/${s.file}.ts)${s.suite.extra ? ': extra, run by --all or --suite' : ''}`);
    return 0;
  }
  const chosen = opts.suites ? opts.suites.map((n) => {
    const s = all.find((x) => x.suite.name === n);
    if (!s) throw new Error(`no suite ${n}: ${all.map((x) => x.suite.name).join(', ')}`);
    return s;
  }) : opts.all ? all : all.filter((s) => !s.suite.extra);
  for (const tool of [QEMU, 'timeout']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is missing (apt-get install -y qemu-system-x86 debootstrap e2fsprogs cpio busybox-static)`);
  }
  const root = process.env['NODENET_VM_RUN_ROOT'] ?? '/tmp/nodenet-test-vm';
  mkdirSync(root, { recursive: true, mode: 0o700 });
  cleanLeftovers(root);
  const runDir = `${root}/run-${process.pid}-${Date.now().toString(36)}`;
  mkdirSync(runDir, { mode: 0o700 });
  writeOwner(runDir, { tag: runDir.split('/').pop()!, namespacePrefix: 'nn-vm-' });
  const total0 = Date.now();
  let failed = 0;
  try {
    const dist = await snapshotDist(runDir, chosen.some((s) => s.suite.needsKubectl));
    const img = ensureImage();
    const acc = opts.accel === 'auto' ? detectAccel(img.dir, runDir) : { accel: opts.accel, why: 'asked for' };
    const accel = acc.accel;
    say(`image ${img.dir} (${img.cached ? 'cached' : 'built'}, ${img.seconds.toFixed(1)} s); accel ${accel}: ${acc.why}`);
    for (const s of chosen) {
      say(`suite ${s.suite.name}: ${s.suite.vms} VMs ...`);
      const r = await runSuite(s, img.dir, dist, runDir, accel, opts);
      // --share-out: what the suite left in its share (results, logs), kept past the run.
      if (opts.shareOut) cpSync(`${r.dir}/share`, `${opts.shareOut}/${s.suite.name}`, { recursive: true });
      r.results.forEach((x, i) => say(`  vm${i + 1}: ${x ? `${x.pass ? 'pass' : 'FAIL'} ${x.details}` : 'no result line (killed or crashed)'}`));
      say(`suite ${s.suite.name}: ${r.pass ? 'PASS' : 'FAIL'} in ${r.seconds.toFixed(1)} s (${accel})`);
      if (!r.pass) {
        failed++;
        printLogs(r.dir);
        say(`kept: ${r.dir}`);
      } else if (!opts.keep) {
        rmSync(r.dir, { recursive: true, force: true });
      }
    }
  } finally {
    say(`total ${((Date.now() - total0) / 1000).toFixed(1)} s, ${chosen.length - failed}/${chosen.length} suites passed`);
    if (failed === 0 && !opts.keep) rmSync(runDir, { recursive: true, force: true });
    else rmSync(`${runDir}/dist`, { recursive: true, force: true });
  }
  return failed === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e: unknown) => {
  process.stderr.write(`test-vm: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
