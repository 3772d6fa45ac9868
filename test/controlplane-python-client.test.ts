/**
 * Kubernetes' official Python client (Debian's python3-kubernetes, which
 * the test setup installs) against the embedded control plane over TLS:
 * a list, then Watch().stream() with bookmarks across a scale of a
 * Deployment, and a raw request with `?watch=True`, which is how that
 * client asks for a watch (kube-apiserver reads any value but absent,
 * `false` and `0` as true; nodenet once answered it with a plain list, and
 * the client saw no events at all). No root needed.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(import.meta.dirname, 'python-client.py');

interface Seen {
  listed: string[];
  listRV: string;
  afterScaleUp: string[];
  afterScaleDown: string[];
  events: { type: string; name?: string; rv: string; kind?: string }[];
  watchErrors: string[];
  watchThreadEnded: boolean;
  raw: Record<'True' | 'False', { lines: number; types: (string | null)[]; kinds: (string | null)[] }>;
}

const dir = mkdtempSync(join(tmpdir(), 'nn-cp-python-'));
let cp: ControlPlane | undefined;
t.teardown(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

t.test('the Python client lists, watches with bookmarks across a scale, and ?watch=True is a watch', async (t) => {
  const probe = await promisify(execFile)(PYTHON, ['-c', 'import kubernetes; print(kubernetes.__version__)']).catch((e: unknown) => {
    throw new Error(`${PYTHON} cannot import kubernetes: install Debian's python3-kubernetes (npm test's preflight does): ${String(e)}`);
  });
  t.comment(`python3-kubernetes ${probe.stdout.trim()}`);
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, version: '0.1.0', bookmarkEveryMs: 300 });
  const { stdout, stderr } = await promisify(execFile)(PYTHON, [SCRIPT, cp.kubeconfig, 'py'], { timeout: 120_000 }).catch((e: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`python-client.py failed: ${e.message}\n${e.stderr ?? ''}\n${e.stdout ?? ''}`);
  });
  if (stderr.trim()) t.comment(stderr.trim());
  const seen = JSON.parse(stdout) as Seen;

  t.equal(seen.listed.length, 1, 'the list has the Deployment\'s one Pod');
  t.match(seen.listRV, /^\d+$/);
  t.same(seen.watchErrors, [], 'the watch raised nothing');
  t.ok(seen.watchThreadEnded, 'Watch.stop() ended the stream');
  const named = (type: string) => seen.events.filter((e) => e.type === type).map((e) => e.name!);
  const added = named('ADDED');
  const deleted = named('DELETED');
  const grown = seen.afterScaleUp.filter((n) => !seen.listed.includes(n));
  t.equal(grown.length, 2, 'the scale to 3 made two Pods');
  t.same([...added].sort(), grown, 'the watch saw exactly the two new Pods ADDED (nothing from before the list)');
  const gone = seen.afterScaleUp.filter((n) => !seen.afterScaleDown.includes(n));
  t.same([...deleted].sort(), [...gone].sort(), 'and exactly the two removed Pods DELETED');
  const revs = seen.events.filter((e) => e.type !== 'BOOKMARK').map((e) => Number(e.rv));
  t.ok(revs.every((rv, i) => rv > Number(seen.listRV) && (i === 0 || rv > revs[i - 1]!)), 'every event after the list\'s resourceVersion, in order');
  const bookmarks = seen.events.filter((e) => e.type === 'BOOKMARK');
  t.ok(bookmarks.length > 0, 'bookmarks arrived (allowWatchBookmarks=True)');
  t.ok(bookmarks.every((b) => b.kind === 'Pod'), 'a bookmark is the watched kind, with only a resourceVersion');

  t.ok(seen.raw.True.lines >= 4, `?watch=True streamed events (${seen.raw.True.lines} lines)`);
  t.ok(seen.raw.True.types.every((x) => x === 'ADDED' || x === 'MODIFIED' || x === 'DELETED'), 'each line of ?watch=True is a watch event');
  t.same(seen.raw.False, { lines: 1, types: [null], kinds: ['PodList'] }, '?watch=False is a list');
});
