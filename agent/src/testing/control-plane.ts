/**
 * testing/control-plane: what the control plane's tests share: a control
 * plane on loopback over a temporary data directory (stopped and removed in
 * teardown, also when a test fails), and the real kubectl on PATH against it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from '../controlplane/control-plane.js';

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
  };
  return env;
}
