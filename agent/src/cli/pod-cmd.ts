/**
 * `nodenet pod`: pods without Kubernetes, wired through the real CNI shim.
 * See pods/local-pods.ts for what a pod is.
 */
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import type { Runner } from '../exec/runner.js';
import { LocalPods } from '../pods/local-pods.js';
import { FlagError, only, parseFlags } from './flags.js';
import { distDir, pausePath, shimPath } from '../config/paths.js';

/** The CNI config `nodenet pod run --socket S` hands the shim: bridge semantics, IPAM from the node's podCIDR. */
export function defaultCniConfig(socket: string): Record<string, unknown> {
  return {
    cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', bridge: 'cbr0',
    isGateway: true, isDefaultGateway: true, hairpinMode: true, agentSocket: socket, ipam: { type: 'host-local' },
  };
}

export function localPods(runner: Runner, runDir: string): LocalPods {
  return new LocalPods({ runner, shim: [process.execPath, shimPath()], pauseBin: pausePath(), runDir, cniPath: distDir() });
}

export async function podCommand(argv: readonly string[], runner: Runner): Promise<number> {
  const p = parseFlags(argv, ['pid-ns', 'json']);
  const [sub, name] = p.positional;
  const runDir = p.flags.get('run-dir') ?? '/run/nodenet';
  const pods = localPods(runner, runDir);
  const need = (): string => {
    if (!name) throw new FlagError(`pod ${sub} needs a pod name`);
    return name;
  };
  switch (sub) {
    case 'run': {
      only(p, ['run-dir', 'socket', 'cni-conf', 'pid-ns']);
      const confFile = p.flags.get('cni-conf');
      const conf: unknown = confFile ? JSON.parse(readFileSync(confFile, 'utf8')) : defaultCniConfig(p.flags.get('socket') ?? `${runDir}/cni.sock`);
      const pod = await pods.create(need(), conf, { pidNamespace: p.flags.has('pid-ns') });
      let line = `pod ${pod.name} ip ${pod.ip} netns ${pod.sandbox.netnsPath}`;
      if (p.rest.length) line += ` app pid ${pods.startApp(pod.name, p.rest).pid}`;
      process.stdout.write(`${line}\n`);
      return 0;
    }
    case 'app': {
      only(p, ['run-dir']);
      if (!p.rest.length) throw new FlagError('pod app needs a command after --');
      process.stdout.write(`${pods.startApp(need(), p.rest).pid}\n`);
      return 0;
    }
    case 'exec': {
      only(p, ['run-dir']);
      if (!p.rest.length) throw new FlagError('pod exec needs a command after --');
      const [cmd, ...args] = pods.joinArgv(need(), p.rest);
      return spawnSync(cmd!, args, { stdio: 'inherit' }).status ?? 1;
    }
    case 'ls':
    case 'list': {
      only(p, ['run-dir', 'json']);
      const all = pods.list();
      if (p.flags.has('json')) process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
      else {
        process.stdout.write('NAME\tIP\tAPPS\tNETNS\n');
        for (const x of all) process.stdout.write(`${x.name}\t${x.ip}\t${x.apps.map((a) => a.pid).join(',') || '-'}\t${x.sandbox.netnsPath}\n`);
      }
      return 0;
    }
    case 'rm':
    case 'remove': {
      only(p, ['run-dir']);
      await pods.remove(need());
      return 0;
    }
    default:
      throw new FlagError(`unknown pod subcommand ${JSON.stringify(sub ?? '')} (run, app, exec, ls, rm)`);
  }
}
