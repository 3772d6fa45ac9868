/**
 * testing/control-plane: what the control plane's tests share: a control
 * plane on loopback over a temporary data directory (stopped and removed in
 * teardown, also when a test fails), and the real kubectl on PATH against it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { statusOf, type Status } from '../api/errors.js';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from '../control-plane.js';

/** The part of a tap test this needs. */
export interface Hooks {
  before(fn: () => Promise<void>): void;
  teardown(fn: () => Promise<void>): void;
}

export interface KubectlResult {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

export interface TestControlPlane {
  /** The temporary directory (the data directory is `<dir>/data`). */
  readonly dir: string;
  /** The running control plane (after `before`). */
  readonly cp: ControlPlane;
  /** The real kubectl, with the admin kubeconfig unless another is given. */
  kubectl(args: readonly string[], opts?: { input?: string; kubeconfig?: string }): Promise<KubectlResult>;
  /** kubectl that must succeed: its stdout. */
  ok(args: readonly string[], opts?: { input?: string; kubeconfig?: string }): Promise<string>;
  /**
   * One request over TLS with the admin token; a JSON body is sent as is (a string) or serialised. `until`: for a
   * stream (a watch), the request is ended by the client as soon as the body so far satisfies it.
   */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>, opts?: { until?: (bodySoFar: string) => boolean }): Promise<Reply>;
}

export interface Reply {
  readonly code: number;
  readonly type: string;
  readonly body: string;
  /** The body parsed, or {} when it is not one JSON document. */
  readonly json: Record<string, unknown>;
}

export function testControlPlane(t: Hooks, prefix: string, opts: Partial<Omit<ControlPlaneOptions, 'dataDir'>> = {}): TestControlPlane {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let cp: ControlPlane | undefined;
  t.before(async () => {
    cp = await startControlPlane({ host: '127.0.0.1', port: 0, version: '0.1.0', ...opts, dataDir: join(dir, 'data') });
  });
  t.teardown(async () => {
    try {
      await cp?.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const env: TestControlPlane = {
    dir,
    get cp() {
      if (!cp) throw new Error('the control plane is not started yet (use it from a test, after before())');
      return cp;
    },
    async kubectl(args, o = {}) {
      const r = await execa('kubectl', [...args], { env: { KUBECONFIG: o.kubeconfig ?? env.cp.kubeconfig }, reject: false, stripFinalNewline: false, ...(o.input !== undefined ? { input: o.input } : {}), timeout: 60_000 });
      return { code: r.exitCode ?? -1, out: String(r.stdout), err: String(r.stderr) };
    },
    async ok(args, o = {}) {
      const r = await env.kubectl(args, o);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.err}`);
      return r.out;
    },
    call(method, path, body, headers = {}, opts = {}) {
      const u = new URL(path, env.cp.url);
      const ca = readFileSync(join(dir, 'data', 'pki', 'ca.crt'), 'utf8');
      const token = (JSON.parse(readFileSync(join(dir, 'data', 'tokens.json'), 'utf8')) as { admin: string }).admin;
      const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = request({
          host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, ca,
          headers: { Authorization: `Bearer ${token}`, ...(data !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(data)) } : {}), ...headers },
        }, (res) => {
          let b = '';
          res.setEncoding('utf8');
          const end = () => {
            let json: Record<string, unknown> = {};
            try {
              json = JSON.parse(b) as Record<string, unknown>;
            } catch {
              /* not one JSON document (a watch stream) */
            }
            resolve({ code: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: b, json });
          };
          res.on('data', (c: string) => {
            b += c;
            if (opts.until?.(b)) {
              end();
              req.destroy();
            }
          });
          res.on('end', end);
        });
        req.on('error', (e) => (opts.until ? undefined : reject(e)));
        req.end(data);
      });
    },
  };
  return env;
}

/** The Status of a call that must fail (a synchronous throw included): what the API would answer. */
export async function failure(f: () => unknown): Promise<Status> {
  try {
    await f();
  } catch (e) {
    return statusOf(e);
  }
  throw new Error('expected the call to fail');
}
