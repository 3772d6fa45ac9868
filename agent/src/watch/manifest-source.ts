/**
 * watch/manifest-source: Services and EndpointSlices from a directory of
 * JSON manifests, delivered to the proxy's handlers as an informer would.
 *
 * For a node with no API server to watch (a lab machine, a Vagrant VM, the
 * tests): drop JSON or YAML manifests (`kubectl get -o json` output, or the
 * files you would `kubectl apply -f`) in the directory and the
 * agent programs them. The directory is rescanned on every change fs.watch
 * reports (debounced) and at least every pollMs, so editors that replace
 * files and filesystems without inotify both work. Write files atomically
 * (temp file + rename) so a half-written file is never read.
 *
 * Semantics follow an informer's: the first complete scan is delivered as
 * adds followed by the synced calls; later scans deliver the difference as
 * add / update(prev, cur) / delete(last known). A file that cannot be read
 * or parsed is reported and keeps its previous objects (a typo never deletes
 * a Service); a file that is removed deletes its objects.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { EndpointSliceHandler, ServiceHandler } from '../proxy/handlers.js';
import { realClock, type Clock } from '../../../lib/reconcile/clock.js';
import { diffObjects, isManifestFile, mergeFiles, parseManifestFile, type ManifestEvent, type ManifestObject } from './manifest-diff.js';

const KINDS: ReadonlySet<string> = new Set(['Service', 'EndpointSlice']);

export interface ManifestSourceDeps {
  readonly dir: string;
  readonly services: ServiceHandler;
  readonly slices: EndpointSliceHandler;
  readonly log: Logger;
  /** Rescan at least this often (ms). Default 2000. */
  readonly pollMs?: number;
  /** Wait this long after a change notification before scanning, to batch a burst of writes. Default 50. */
  readonly debounceMs?: number;
  /** Called after a scan that delivered events or changed errors(), and after the first one. */
  readonly onScan?: () => void;
  /** Timers for polling and debouncing (default: the real clock). */
  readonly clock?: Clock;
}

export class ManifestSource {
  private readonly log: Logger;
  private readonly perFile = new Map<string, readonly ManifestObject[]>();
  private view = new Map<string, ManifestObject>();
  private synced = false;
  private watcher: FSWatcher | null = null;
  private readonly clock: Clock;
  private started = false;
  private poll: unknown = null;
  private debounce: unknown = null;
  private scanning: Promise<void> = Promise.resolve();
  private gen = 0;
  private readonly badFiles = new Map<string, string>();
  /** Per file: the inode, size and mtime it had when last read. */
  private readonly seen = new Map<string, string>();

  constructor(private readonly deps: ManifestSourceDeps) {
    this.log = deps.log.child({ [F.subsys]: 'manifests' });
    this.clock = deps.clock ?? realClock;
  }

  /** Scans once (delivering the initial list and the synced calls), then follows changes. Idempotent. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.scan();
    try {
      this.watcher = watch(this.deps.dir, () => this.schedule());
      this.watcher.on('error', (err) => this.log.warn({ [F.err]: err }, 'manifest directory watch failed; polling only'));
    } catch (err) {
      this.log.warn({ [F.err]: err }, 'cannot watch the manifest directory; polling only');
    }
    this.armPoll();
  }

  stop(): void {
    this.started = false;
    this.watcher?.close();
    this.watcher = null;
    if (this.poll !== null) this.clock.clearTimeout(this.poll);
    if (this.debounce !== null) this.clock.clearTimeout(this.debounce);
    this.poll = null;
    this.debounce = null;
  }

  private armPoll(): void {
    this.poll = this.clock.setTimeout(() => {
      this.poll = null;
      if (!this.started) return;
      this.schedule();
      this.armPoll();
    }, this.deps.pollMs ?? 2000);
  }

  /** Incremented each time a scan delivers at least one event. */
  get generation(): number {
    return this.gen;
  }

  /** Files whose last read failed, with the reason (their previous objects are kept). */
  errors(): ReadonlyMap<string, string> {
    return this.badFiles;
  }

  private schedule(): void {
    if (this.debounce !== null || !this.started) return;
    this.debounce = this.clock.setTimeout(() => {
      this.debounce = null;
      void this.scan();
    }, this.deps.debounceMs ?? 50);
  }

  /** Reads the directory and delivers what changed. Scans never overlap. */
  scan(): Promise<void> {
    const p = this.scanning.then(() => this.doScan());
    this.scanning = p.catch(() => undefined);
    return p;
  }

  private async doScan(): Promise<void> {
    const errorsBefore = JSON.stringify([...this.badFiles]);
    let names: string[];
    try {
      names = (await readdir(this.deps.dir)).filter(isManifestFile).sort();
    } catch (err) {
      // A missing directory is an empty one (but keep what we have if it is unreadable for another reason).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.log.error({ [F.err]: err }, `cannot read manifest directory ${this.deps.dir}; keeping the current objects`);
        return;
      }
      names = [];
    }
    let changed = names.length !== this.seen.size || names.some((n) => !this.seen.has(n));
    for (const f of [...this.perFile.keys()]) if (!names.includes(f)) this.perFile.delete(f);
    for (const f of [...this.badFiles.keys()]) if (!names.includes(f)) this.badFiles.delete(f);
    for (const f of [...this.seen.keys()]) if (!names.includes(f)) this.seen.delete(f);
    for (const name of names) {
      // A file whose inode, size and mtime are those of the last read is not read again (a poll of a
      // directory of 10,000 Services used to re-parse megabytes every two seconds).
      let sig: string;
      try {
        const st = await stat(`${this.deps.dir}/${name}`);
        sig = `${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        continue; // removed meanwhile; the next scan sees it gone
      }
      if (this.seen.get(name) === sig) continue;
      this.seen.set(name, sig);
      changed = true;
      try {
        const { objects, skipped } = parseManifestFile(name, await readFile(`${this.deps.dir}/${name}`, 'utf8'), KINDS);
        this.perFile.set(name, objects);
        if (this.badFiles.delete(name)) this.log.info(`manifest ${name} is readable again`);
        if (skipped > 0) this.log.debug({ [F.count]: skipped }, `manifest ${name}: skipped objects of other kinds`);
      } catch (err) {
        const msg = (err as Error).message;
        if (this.badFiles.get(name) !== msg) this.log.error({ [F.err]: err }, `manifest ${name} ignored, its previous objects kept: ${msg}`);
        this.badFiles.set(name, msg);
      }
    }
    let events: ManifestEvent[] = [];
    if (changed || !this.synced) {
      const { view, errors } = mergeFiles(this.perFile);
      for (const e of errors) this.log.error({ [F.err]: e }, e.message);
      events = diffObjects(this.view, view);
      this.view = view;
    }
    const view = this.view;
    for (const e of events) this.deliver(e);
    if (events.length > 0) this.gen++;
    const first = !this.synced;
    if (first) {
      this.synced = true;
      this.deps.services.onServicesSynced();
      this.deps.slices.onEndpointSlicesSynced();
      this.log.info({ [F.count]: view.size }, `manifests: initial list of ${view.size} objects delivered`);
    }
    // Polls that find nothing new stay quiet: the status file is rewritten only when something changed.
    if (first || events.length > 0 || JSON.stringify([...this.badFiles]) !== errorsBefore) this.deps.onScan?.();
  }

  private deliver(e: ManifestEvent): void {
    const kind = e.type === 'delete' ? e.prev.kind : e.cur.kind;
    const { services: s, slices: es } = this.deps;
    if (kind === 'Service') {
      if (e.type === 'add') s.onServiceAdd(e.cur.object);
      else if (e.type === 'update') s.onServiceUpdate(e.prev.object, e.cur.object);
      else s.onServiceDelete(e.prev.object);
    } else {
      if (e.type === 'add') es.onEndpointSliceAdd(e.cur.object);
      else if (e.type === 'update') es.onEndpointSliceUpdate(e.prev.object, e.cur.object);
      else es.onEndpointSliceDelete(e.prev.object);
    }
  }
}
