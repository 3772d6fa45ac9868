/**
 * `nodenet pod`: pods without Kubernetes, wired through the real CNI shim.
 * See pods/local-pods.ts for what a pod is.
 */
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { stringify as toYaml } from 'yaml';
import type { Runner } from '../exec/runner.js';
import { nodenetNetConf } from '../cnitypes/nodenet-netconf.js';
import { LocalPods } from '../pods/local-pods.js';
import { FlagError, OUTPUT_FLAGS, outputFormat, parseFlags, type FlagSpecs } from './flags.js';
import { distDir, pausePath, shimPath } from '../config/paths.js';
import { formatTable } from './table.js';

export const POD_USAGE = `usage: nodenet pod run NAME [--socket S | --cni-conf FILE] [--run-dir D] [--pid-ns] [-- CMD ARGS...]
       nodenet pod app NAME [--run-dir D] -- CMD ARGS...     another long-running app process in the pod
       nodenet pod exec NAME [--run-dir D] -- CMD ARGS...    run a command inside the pod's namespaces
       nodenet pod ls [--run-dir D] [-o wide|json|yaml]
       nodenet pod rm NAME [--run-dir D]                     apps killed, CNI DEL, pause stopped
A pod is a pause process holding new network, IPC and UTS namespaces, wired with a CNI ADD through nodenet-cni.`;

export function localPods(runner: Runner, runDir: string): LocalPods {
  return new LocalPods({ runner, shim: [shimPath()], pauseBin: pausePath(), runDir, cniPath: distDir() });
}

const RUN_DIR: FlagSpecs = { 'run-dir': { type: 'string' } };
const SPECS: Readonly<Record<string, FlagSpecs>> = {
  run: { ...RUN_DIR, socket: { type: 'string' }, 'cni-conf': { type: 'string' }, 'pid-ns': { type: 'boolean' } },
  app: RUN_DIR,
  exec: RUN_DIR,
  ls: { ...RUN_DIR, ...OUTPUT_FLAGS },
  rm: RUN_DIR,
};
const ALIASES: Readonly<Record<string, string>> = { list: 'ls', remove: 'rm' };

export async function podCommand(argv: readonly string[], deps: { runner: Runner; stdout: (s: string) => void }): Promise<number> {
  const [first, ...tail] = argv;
  if (first === undefined || first === '-h' || first === '--help') {
    deps.stdout(`${POD_USAGE}\n`);
    return first === undefined ? 2 : 0;
  }
  const sub = ALIASES[first] ?? first;
  const spec = SPECS[sub];
  if (!spec) throw new FlagError(`unknown pod subcommand ${JSON.stringify(first)} (run, app, exec, ls, rm)`);
  const p = parseFlags(tail, spec);
  if (p.help) {
    deps.stdout(`${POD_USAGE}\n`);
    return 0;
  }
  const runDir = p.flags.get('run-dir') ?? '/run/nodenet';
  const pods = localPods(deps.runner, runDir);
  const [name, ...extra] = p.positional;
  if (extra.length) throw new FlagError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const need = (): string => {
    if (!name) throw new FlagError(`pod ${sub} needs a pod name`);
    return name;
  };
  const needCommand = (): readonly string[] => {
    if (!p.rest.length) throw new FlagError(`pod ${sub} needs a command after --`);
    return p.rest;
  };
  switch (sub) {
    case 'run': {
      if (p.flags.has('socket') && p.flags.has('cni-conf')) throw new FlagError('--socket and --cni-conf exclude each other');
      const confFile = p.flags.get('cni-conf');
      const conf: unknown = confFile ? JSON.parse(readFileSync(confFile, 'utf8')) : nodenetNetConf({ agentSocket: p.flags.get('socket') ?? `${runDir}/cni.sock` });
      const pod = await pods.create(need(), conf, { pidNamespace: p.flags.has('pid-ns') });
      let line = `pod ${pod.name} ip ${pod.ip} netns ${pod.sandbox.netnsPath}`;
      if (p.rest.length) line += ` app pid ${pods.startApp(pod.name, p.rest).pid}`;
      deps.stdout(`${line}\n`);
      return 0;
    }
    case 'app':
      deps.stdout(`${pods.startApp(need(), needCommand()).pid}\n`);
      return 0;
    case 'exec': {
      const [cmd, ...args] = pods.joinArgv(need(), needCommand());
      return spawnSync(cmd!, args, { stdio: 'inherit' }).status ?? 1;
    }
    case 'ls': {
      if (name) throw new FlagError(`unexpected argument ${JSON.stringify(name)}`);
      const fmt = outputFormat(p, ['table', 'wide', 'json', 'yaml'] as const, 'table');
      const all = pods.list();
      if (fmt === 'json') deps.stdout(`${JSON.stringify(all, null, 2)}\n`);
      else if (fmt === 'yaml') deps.stdout(toYaml(all));
      else {
        const apps = (x: (typeof all)[number]) => x.apps.map((a) => a.pid).join(',') || '<none>';
        deps.stdout(
          fmt === 'wide'
            ? formatTable(['NAME', 'IP', 'APPS', 'PAUSE', 'CONTAINER-ID', 'NETNS'], all.map((x) => [x.name, x.ip, apps(x), String(x.sandbox.pid), x.containerId.slice(0, 12), x.sandbox.netnsPath]))
            : formatTable(['NAME', 'IP', 'APPS'], all.map((x) => [x.name, x.ip, apps(x)])),
        );
      }
      return 0;
    }
    case 'rm':
      await pods.remove(need());
      return 0;
  }
  return 2;
}
