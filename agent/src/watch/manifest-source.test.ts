import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync, renameSync, unlinkSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { silentLogger } from '../../../lib/log/log.js';
import { ManifestSource } from './manifest-source.js';
import type { EndpointSliceHandler, ServiceHandler } from '../proxy/handlers.js';

/** Records handler calls as "op kind name[/clusterIP]". */
class Recorder implements ServiceHandler, EndpointSliceHandler {
  calls: string[] = [];
  private d(o: unknown): string {
    const r = o as { metadata: { name: string }; spec?: { clusterIP?: string } };
    return r.spec?.clusterIP ? `${r.metadata.name}/${r.spec.clusterIP}` : r.metadata.name;
  }
  onServiceAdd(s: unknown) { this.calls.push(`add svc ${this.d(s)}`); }
  onServiceUpdate(p: unknown, c: unknown) { this.calls.push(`update svc ${this.d(p)} -> ${this.d(c)}`); }
  onServiceDelete(s: unknown) { this.calls.push(`delete svc ${this.d(s)}`); }
  onServicesSynced() { this.calls.push('synced svc'); }
  onEndpointSliceAdd(s: unknown) { this.calls.push(`add eps ${this.d(s)}`); }
  onEndpointSliceUpdate(p: unknown, c: unknown) { this.calls.push(`update eps ${this.d(p)} -> ${this.d(c)}`); }
  onEndpointSliceDelete(s: unknown) { this.calls.push(`delete eps ${this.d(s)}`); }
  onEndpointSlicesSynced() { this.calls.push('synced eps'); }
}

const svc = (name: string, ip: string) => ({ kind: 'Service', metadata: { name }, spec: { clusterIP: ip } });
const eps = (name: string) => ({ kind: 'EndpointSlice', metadata: { name } });

function put(dir: string, file: string, doc: unknown): void {
  writeFileSync(`${dir}/.${file}.tmp`, typeof doc === 'string' ? doc : JSON.stringify(doc));
  renameSync(`${dir}/.${file}.tmp`, `${dir}/${file}`);
}

t.test('initial list then synced; changes delivered as an informer would; a broken file keeps its objects', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-manifests-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  put(dir, 'web.json', [svc('web', '10.96.0.10'), eps('web-1')]);
  const rec = new Recorder();
  const src = new ManifestSource({ dir, services: rec, slices: rec, log: silentLogger(), pollMs: 60_000 });
  await src.start();
  t.teardown(() => src.stop());
  t.same(rec.calls, ['add eps web-1', 'add svc web/10.96.0.10', 'synced svc', 'synced eps']);
  t.equal(src.generation, 1);

  rec.calls = [];
  put(dir, 'web.json', [svc('web', '10.96.0.20'), eps('web-1')]);
  put(dir, 'db.json', svc('db', '10.96.0.30'));
  await src.scan();
  t.same(rec.calls, ['add svc db/10.96.0.30', 'update svc web/10.96.0.10 -> web/10.96.0.20']);

  rec.calls = [];
  put(dir, 'web.json', '{"kind": "Service", ');
  await src.scan();
  t.same(rec.calls, [], 'a broken file changes nothing');
  t.match(src.errors().get('web.json'), /not valid JSON/);

  unlinkSync(`${dir}/web.json`);
  await src.scan();
  t.same(rec.calls, ['delete eps web-1', 'delete svc web/10.96.0.20'], 'a removed file deletes its objects');
  t.equal(src.errors().size, 0);
});

t.test('fs.watch picks up a new file without waiting for the poll', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-manifests-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rec = new Recorder();
  const src = new ManifestSource({ dir, services: rec, slices: rec, log: silentLogger(), pollMs: 60_000, debounceMs: 10 });
  await src.start();
  t.teardown(() => src.stop());
  t.same(rec.calls, ['synced svc', 'synced eps'], 'an empty directory is a complete (empty) list');
  put(dir, 'a.json', svc('a', '10.96.0.1'));
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline && rec.calls.length < 3) await new Promise((r) => setTimeout(r, 10));
  t.same(rec.calls.slice(2), ['add svc a/10.96.0.1']);
});

t.test('a missing directory is an empty list', async (t) => {
  const rec = new Recorder();
  const src = new ManifestSource({ dir: `${tmpdir()}/nn-does-not-exist-${process.pid}`, services: rec, slices: rec, log: silentLogger(), pollMs: 60_000 });
  await src.scan();
  t.same(rec.calls, ['synced svc', 'synced eps']);
});

t.test('timers come from the injected clock: no rescan until it moves, then one per poll', async (t) => {
  const { FakeClock } = await import('../../../lib/reconcile/clock.fake.js');
  const clock = new FakeClock(0);
  const dir = mkdtempSync(`${tmpdir()}/nn-manifests-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rec = new Recorder();
  let scans = 0;
  const src = new ManifestSource({ dir, services: rec, slices: rec, log: silentLogger(), pollMs: 1000, debounceMs: 10, clock, onScan: () => scans++ });
  await src.start();
  t.teardown(() => src.stop());
  t.equal(scans, 1);
  put(dir, 'a.json', svc('a', '10.96.0.1'));
  await new Promise((r) => setTimeout(r, 100)); // real time passes, fake time does not
  t.equal(scans, 1, 'nothing rescanned while the clock stands still');
  await clock.advance(1000);
  for (let i = 0; i < 100 && scans < 2; i++) await new Promise((r) => setTimeout(r, 10));
  t.same(rec.calls.slice(2), ['add svc a/10.96.0.1']);
  t.equal(scans, 2);
  await src.scan();
  t.equal(scans, 2, 'a scan that finds nothing new does not call onScan');
  put(dir, 'a.json', '{');
  await src.scan();
  t.equal(scans, 3, 'a file turning unreadable does');
  src.stop();
  t.equal(clock.pending, 0, 'stop() clears its timers');
});

t.test('a file unchanged since the last scan (inode, size, mtime) is not read again; a change is', async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/nn-manifests-`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(`${dir}/web.json`, JSON.stringify([svc('web', '10.96.0.10')]));
  const mtime = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  utimesSync(`${dir}/web.json`, mtime, mtime); // whole seconds: restorable exactly below
  const rec = new Recorder();
  const src = new ManifestSource({ dir, services: rec, slices: rec, log: silentLogger(), pollMs: 60_000 });
  await src.start();
  t.teardown(() => src.stop());
  // Rewritten in place with the same size, then its mtime put back: a poll sees the same file and skips it.
  writeFileSync(`${dir}/web.json`, JSON.stringify([svc('web', '10.96.0.11')]));
  utimesSync(`${dir}/web.json`, mtime, mtime);
  await src.scan();
  t.same(rec.calls.filter((c) => c.startsWith('update')), [], 'not re-read');
  utimesSync(`${dir}/web.json`, new Date(), new Date(mtime.getTime() + 5000));
  await src.scan();
  t.same(rec.calls.filter((c) => c.startsWith('update')), ['update svc web/10.96.0.10 -> web/10.96.0.11'], 'a new mtime: read and delivered');
});
