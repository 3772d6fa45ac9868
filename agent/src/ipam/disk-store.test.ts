import t, { type Test as Tap } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode } from '../../../lib/errors/errors.js';
import { isIPv4, parseIPv4, ipToInt, type IPv4 } from '../../../lib/net/ip.js';
import { parseIpamConf } from './config.js';
import { DiskStore, LAST_RESERVED_PREFIX, TMP_PREFIX } from './disk-store.js';
import { createDiskIpam } from './ipam.js';
import { rejectsWith } from './test-helpers.js';

const ip = (s: string): IPv4 => parseIPv4(s);
const CHILD = fileURLToPath(new URL('./disk-store.child.ts', import.meta.url));

function tempDir(t: Tap): string {
  const d = mkdtempSync(join(tmpdir(), 'nn-ipam-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

t.test('reserve is exclusive, writes host-local format, release/releaseByID', async (t) => {
  const dir = tempDir(t);
  const s = new DiskStore(dir, 'net');
  await s.withLock(async () => {
    t.equal(await s.reserve('c1', 'eth0', ip('10.0.0.2'), '0'), true);
    t.equal(await s.reserve('c2', 'eth0', ip('10.0.0.2'), '0'), false, 'taken');
    t.equal(await s.reserve('c1', 'eth1', ip('10.0.0.3'), '0'), true);
    t.equal(await s.reserve('c2', 'eth0', ip('10.0.0.4'), '1'), true);
  });
  t.equal(readFileSync(join(dir, 'net', '10.0.0.2'), 'utf8'), 'c1\r\neth0');
  t.equal(readFileSync(join(dir, 'net', `${LAST_RESERVED_PREFIX}0`), 'utf8'), '10.0.0.3');
  t.equal(readFileSync(join(dir, 'net', `${LAST_RESERVED_PREFIX}1`), 'utf8'), '10.0.0.4');
  t.same(readdirSync(join(dir, 'net')).sort(), ['10.0.0.2', '10.0.0.3', '10.0.0.4', 'last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
  t.same(await s.getByID('c1', 'eth0'), ['10.0.0.2']);
  t.same(await s.listAll(), [
    { ip: '10.0.0.2', id: 'c1', ifName: 'eth0' },
    { ip: '10.0.0.3', id: 'c1', ifName: 'eth1' },
    { ip: '10.0.0.4', id: 'c2', ifName: 'eth0' },
  ]);
  await rejectsWith(t, s.reserve('c3', 'eth0', ip('10.0.0.5'), '0'), ErrorCode.Internal, /outside withLock/);
  await rejectsWith(t, s.withLock(() => s.reserve('c3', 'eth0', ip('10.0.0.5'), '../x')), ErrorCode.Internal, /rangeId/);
  t.same(await s.withLock(() => s.releaseByID('c1', 'eth0')), ['10.0.0.2']);
  t.same(await s.withLock(() => s.releaseByID('c1', 'eth0')), [], 'idempotent');
  await s.withLock(() => s.release(ip('10.0.0.3')));
  await s.withLock(() => s.release(ip('10.0.0.3')));
  t.same((await s.listAll()).map((r) => r.ip), ['10.0.0.4']);
  // The freed IP is reservable again.
  t.equal(await s.withLock(() => s.reserve('c9', 'eth0', ip('10.0.0.2'), '0')), true);
  // A store on a network that was never written reads as empty.
  t.same(await new DiskStore(dir, 'empty').listAll(), []);
  t.throws(() => new DiskStore(dir, '../escape'), /network/);
});

t.test('host-local compatibility: legacy id-only files, \\n files, foreign names', async (t) => {
  const dir = tempDir(t);
  const net = join(dir, 'net');
  mkdirSync(net);
  writeFileSync(join(net, '10.0.0.7'), 'legacy-id');
  writeFileSync(join(net, '10.0.0.8'), 'unix-id\neth0\n');
  writeFileSync(join(net, '10.0.0.9'), '');
  writeFileSync(join(net, 'README'), 'not an ip');
  symlinkSync('/nonexistent', join(net, '10.0.0.10'));
  const s = new DiskStore(dir, 'net');
  t.same(await s.getByID('legacy-id', 'eth3'), ['10.0.0.7'], 'legacy record matches any ifName of its id');
  t.same(await s.getByID('unix-id', 'eth0'), ['10.0.0.8']);
  await s.withLock(async () => {
    t.equal(await s.reserve('x', 'eth0', ip('10.0.0.10'), '0'), false, 'a symlink squatting a name is never followed or replaced');
  });
  const all = await s.listAll();
  t.same(all.find((r) => r.ip === '10.0.0.9'), { ip: '10.0.0.9', id: '', ifName: '' }, 'empty file: held by unknown');
  // An empty (unknown-owner) file is reclaimable by GC.
  const ipam = createDiskIpam(dir);
  const released = await ipam.gc('net', [
    { id: 'legacy-id', ifName: 'eth0' },
    { id: 'unix-id', ifName: 'eth0' },
  ]);
  t.ok(released.includes(ip('10.0.0.9')));
  t.notOk(existsSync(join(net, '10.0.0.9')));
  t.ok(existsSync(join(net, '10.0.0.7')));
  await ipam.del('net', 'legacy-id', 'eth0');
  t.notOk(existsSync(join(net, '10.0.0.7')), 'DEL removes a legacy record');
  t.ok(existsSync(join(net, 'README')), 'foreign names are left alone');
});

t.test('the cursor is overwritten in place: a shorter address leaves no tail of a longer one, and no temp file', async (t) => {
  const dir = tempDir(t);
  const s = new DiskStore(dir, 'net');
  await s.withLock(async () => {
    await s.reserve('c1', 'eth0', ip('10.0.0.100'), '0');
    t.equal(readFileSync(join(dir, 'net', `${LAST_RESERVED_PREFIX}0`), 'utf8'), '10.0.0.100');
    await s.reserve('c2', 'eth0', ip('10.0.0.9'), '0');
  });
  t.equal(readFileSync(join(dir, 'net', `${LAST_RESERVED_PREFIX}0`), 'utf8'), '10.0.0.9', 'host-local\'s format: the address alone');
  t.equal(await s.lastReservedIP('0'), '10.0.0.9');
  t.same(readdirSync(join(dir, 'net')).filter((n) => n.startsWith(TMP_PREFIX)), []);
});

t.test('last_reserved_ip survives a restart: round-robin continues', async (t) => {
  const dir = tempDir(t);
  const conf = parseIpamConf('net', { subnet: '10.3.0.0/24' });
  const a = createDiskIpam(dir);
  for (let i = 0; i < 3; i++) await a.add(conf, { id: `c${i}`, ifName: 'eth0' });
  await a.del('net', 'c0', 'eth0');
  await a.del('net', 'c1', 'eth0');
  // A new process: fresh instances, same directory.
  const b = createDiskIpam(dir);
  const r = await b.add(conf, { id: 'n1', ifName: 'eth0' });
  t.equal(r.ips[0]!.address, '10.3.0.5/24', 'continues after .4, does not reuse the freed .2');
  t.same(await b.get('net', 'c2', 'eth0'), ['10.3.0.4']);
  t.equal(await new DiskStore(dir, 'net').lastReservedIP('0'), '10.3.0.5');
  // A torn or garbage cursor is only a lost hint.
  writeFileSync(join(dir, 'net', `${LAST_RESERVED_PREFIX}0`), 'garbage');
  t.equal((await createDiskIpam(dir).add(conf, { id: 'n2', ifName: 'eth0' })).ips[0]!.address, '10.3.0.2/24');
});

t.test('orphan tmp files are swept on the first lock and by GC', async (t) => {
  const dir = tempDir(t);
  const net = join(dir, 'net');
  mkdirSync(net);
  writeFileSync(join(net, `${TMP_PREFIX}10.0.0.2.999.1`), 'dead\r\neth0');
  const s = new DiskStore(dir, 'net');
  t.same(await s.listAll(), [], 'a tmp file holds nothing');
  await s.withLock(async () => undefined);
  t.same(readdirSync(net), ['lock']);
  writeFileSync(join(net, `${TMP_PREFIX}10.0.0.3.999.2`), '');
  await createDiskIpam(dir).gc('net', []);
  t.same(readdirSync(net), ['lock']);
});

t.test('100 concurrent adds on one Ipam: 100 distinct IPs; 100 dels leave no IP file', async (t) => {
  const dir = tempDir(t);
  const ipam = createDiskIpam(dir);
  const conf = parseIpamConf('net', { type: 'host-local', ranges: [[{ subnet: '10.4.0.0/24' }]], routes: [{ dst: '0.0.0.0/0' }] });
  const t0 = performance.now();
  const res = await Promise.all(Array.from({ length: 100 }, (_, i) => ipam.add(conf, { id: `c${i}`, ifName: 'eth0' })));
  const addMs = performance.now() - t0;
  const ips = res.map((r) => r.ips[0]!.address);
  t.equal(new Set(ips).size, 100, 'distinct');
  t.ok(ips.every((a) => /^10\.4\.0\.\d+\/24$/.test(a) && a !== '10.4.0.1/24'));
  t.equal(readdirSync(join(dir, 'net')).filter(isIPv4).length, 100);
  // Retried ADDs, concurrently: no leak.
  const again = await Promise.all(Array.from({ length: 100 }, (_, i) => ipam.add(conf, { id: `c${i}`, ifName: 'eth0' })));
  t.same(again.map((r) => r.ips[0]!.address), ips);
  t.equal(readdirSync(join(dir, 'net')).filter(isIPv4).length, 100);
  const t1 = performance.now();
  await Promise.all(Array.from({ length: 100 }, (_, i) => ipam.del('net', `c${i}`, 'eth0')));
  const delMs = performance.now() - t1;
  t.same(readdirSync(join(dir, 'net')).filter((n) => !n.startsWith(LAST_RESERVED_PREFIX)), ['lock']);
  t.comment(`100 adds ${addMs.toFixed(0)} ms, 100 dels ${delMs.toFixed(0)} ms (fsync on)`);
});

t.test('two store instances in one process exclude each other', async (t) => {
  const dir = tempDir(t);
  const a = new DiskStore(dir, 'net');
  const b = new DiskStore(dir, 'net');
  let inside = 0;
  let maxInside = 0;
  const work = (s: DiskStore) =>
    s.withLock(async () => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      await new Promise((r) => setTimeout(r, 2));
      inside--;
    });
  await Promise.all(Array.from({ length: 20 }, (_, i) => work(i % 2 ? a : b)));
  t.equal(maxInside, 1);
});

function spawnChild(t: Tap, args: string[]): { child: ChildProcess; lines: string[]; waitFor: (re: RegExp, ms: number) => Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines: string[] = [];
  let buf = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
    waiters.splice(0).forEach((w) => w());
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const waitFor = (re: RegExp, ms: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`child: no ${re} within ${ms} ms; stderr: ${stderr}`)), ms);
      const check = () => {
        if (lines.some((l) => re.test(l))) {
          clearTimeout(timer);
          resolve();
        } else waiters.push(check);
      };
      child.on('exit', () => {
        clearTimeout(timer);
        reject(new Error(`child exited before ${re}; stderr: ${stderr}`));
      });
      check();
    });
  return { child, lines, waitFor };
}

async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

t.test('the lock is cross-process and dies with its holder', async (t) => {
  const dir = tempDir(t);
  const { child, waitFor } = spawnChild(t, ['hold-lock', dir, 'net']);
  await waitFor(/^locked$/, 20_000);
  const s = new DiskStore(dir, 'net', { lockTimeoutMs: 300 });
  const t0 = performance.now();
  await rejectsWith(t, s.withLock(async () => 1), ErrorCode.TryAgainLater, /locked by another process/);
  t.ok(performance.now() - t0 >= 290, 'waited for the timeout');
  // SIGKILL the holder: the kernel drops its flock, no stale lock remains.
  await killAndWait(child);
  const s2 = new DiskStore(dir, 'net', { lockTimeoutMs: 2000 });
  t.equal(await s2.withLock(async () => 42), 42);
});

t.test('kill -9 during concurrent adds never corrupts the store', async (t) => {
  const dir = tempDir(t);
  const net = join(dir, 'net');
  const subnet = '10.60.0.0/23'; // 510 candidates: a few rounds of 150 adds wrap around
  const conf = parseIpamConf('net', { subnet });
  const gateway = '10.60.0.1';
  const rounds = 5;
  const live = new Map<string, string>(); // id -> ip of every ADD we know returned and was not DELeted

  for (let round = 0; round < rounds; round++) {
    const prefix = `r${round}-`;
    const { child, lines, waitFor } = spawnChild(t, ['adds', dir, 'net', subnet, prefix, '150']);
    await waitFor(/^ready$/, 20_000);
    // Kill at a random moment while adds are in flight (a full run takes ~100-600 ms here).
    const delay = Math.floor(Math.random() * 250);
    await new Promise((r) => setTimeout(r, delay));
    await killAndWait(child);
    const finished = lines.includes('done');
    const reported = new Map<string, string>();
    const deleted = new Set<string>();
    for (const l of lines) {
      const [what, id, addr] = l.split(' ');
      if (what === 'ok') reported.set(id!, addr!);
      if (what === 'del') {
        reported.delete(id!);
        deleted.add(id!);
      }
    }
    // 1. Every name in the directory is known, and every IP file is complete and well-formed.
    // Killed before its first write (a loaded machine), the store has no directory yet: only valid if no ADD returned.
    const names = existsSync(net) ? readdirSync(net) : [];
    if (!existsSync(net)) t.notOk(lines.some((l) => l.startsWith('ok')), 'no store directory: no ADD had returned');
    const orphans = names.filter((n) => n.startsWith(TMP_PREFIX)).length;
    const returned = lines.filter((l) => l.startsWith('ok')).length;
    t.comment(`round ${round}: killed after ${delay} ms, ${returned} adds returned, ${orphans} orphan tmp files${finished ? ' (finished)' : ''}`);
    const holders = new Map<string, string>(); // ip -> id
    for (const n of names) {
      if (n === 'lock' || n.startsWith(TMP_PREFIX)) continue;
      if (n.startsWith(LAST_RESERVED_PREFIX)) {
        t.ok(isIPv4(readFileSync(join(net, n), 'utf8')), `${n} is a whole IP (atomic rename)`);
        continue;
      }
      t.ok(isIPv4(n), `${n} is an IP file`);
      const text = readFileSync(join(net, n), 'utf8');
      const m = /^((?:r|fresh)\d+-\d+)\r\neth0$/.exec(text);
      if (!m) {
        t.fail(`${n} holds ${JSON.stringify(text)}: not a complete record`);
        continue;
      }
      t.not(n, gateway, 'gateway never held');
      t.ok(ipToInt(n) > ipToInt('10.60.0.0') && ipToInt(n) < ipToInt('10.60.1.255'), `${n} inside the subnet, not network/broadcast`);
      holders.set(n, m[1]!);
    }
    // 2. No attachment holds two IPs (which would also mean a lost one).
    const byId = new Map<string, string[]>();
    for (const [ipa, id] of holders) byId.set(id, [...(byId.get(id) ?? []), ipa]);
    for (const [id, list] of byId) t.equal(list.length, 1, `${id} holds ${list.join(',')}`);
    // 3. Every ADD that returned (and was not DELeted) is on disk with the IP it returned.
    for (const [id, addr] of reported) t.equal(holders.get(addr), id, `${id}'s reported ${addr} is on disk`);
    for (const [id, addr] of live) t.equal(holders.get(addr), id, `earlier round's ${id} still holds ${addr}`);
    for (const id of deleted) t.notOk(byId.has(id), `${id} was DELeted and holds nothing`);
    for (const [id, addr] of reported) live.set(id, addr);
    // 4. A fresh Ipam (a restarted agent) continues without handing out a held IP.
    const before = new Set(holders.keys());
    const fresh = createDiskIpam(dir);
    for (let i = 0; i < 5; i++) {
      const id = `fresh${round}-${i}`;
      const a = (await fresh.add(conf, { id, ifName: 'eth0' })).ips[0]!.address.split('/')[0]!;
      t.notOk(before.has(a), `fresh allocation ${a} was not held`);
      before.add(a);
      live.set(id, a);
    }
    t.same(readdirSync(net).filter((n) => n.startsWith(TMP_PREFIX)), [], 'orphan tmp files swept');
  }

  // 5. Releasing every id found frees everything.
  const ipam = createDiskIpam(dir);
  const ids = new Set((await new DiskStore(dir, 'net').listAll()).map((r) => r.id));
  for (const id of live.keys()) t.ok(ids.has(id), `${id} found`);
  for (const id of ids) await ipam.del('net', id, 'eth0');
  t.same(readdirSync(net).filter((n) => isIPv4(n) || n.startsWith(TMP_PREFIX)), []);
});

t.test('remembered owners: files written by someone else are read; a name re-taken behind our back is not released as ours', async (t) => {
  const dir = tempDir(t);
  const s = new DiskStore(dir, 'net1', { fsync: false });
  await s.withLock(async () => {
    t.ok(await s.reserve('c1', 'eth0', ip('10.1.0.2'), '0'));
    t.same(await s.getByID('c1', 'eth0'), ['10.1.0.2']);
  });
  // Another writer (host-local, a second process) adds one file and replaces ours with another owner.
  writeFileSync(join(dir, 'net1', '10.1.0.3'), 'c3\r\neth0');
  rmSync(join(dir, 'net1', '10.1.0.2'));
  writeFileSync(join(dir, 'net1', '10.1.0.2'), 'other\r\neth0');
  await s.withLock(async () => {
    t.same(await s.getByID('c3', 'eth0'), ['10.1.0.3'], 'a new file is read');
    t.same(await s.getByID('c1', 'eth0'), [], 'the file on disk says another owner holds it');
    t.same(await s.releaseByID('c1', 'eth0'), [], 'so it is not released as ours');
    t.equal(readFileSync(join(dir, 'net1', '10.1.0.2'), 'utf8'), 'other\r\neth0');
    t.same(await s.getByID('other', 'eth0'), ['10.1.0.2'], 'and it is now listed under its real owner');
  });
});
