/**
 * cli: the `nodenet` command. Each subcommand lives in its own file and gets
 * its real dependencies from main.ts.
 */
import type { Runner } from '../exec/runner.js';
import { agentCommand, type StartAgent } from './agent-cmd.js';
import { podCommand } from './pod-cmd.js';
import { demoCommand } from './demo-cmd.js';
import { traceCommand } from './trace-cmd.js';
import { FlagError } from './flags.js';
import { proxyCommand, type ProxyCmdDeps } from './proxy-cmd.js';

export const VERSION = '0.1.0';

export interface CliDeps {
  readonly startAgent: StartAgent;
  readonly runner: Runner;
  readonly removeProxyRules: ProxyCmdDeps['removeRules'];
}

export const USAGE = `usage: nodenet <command> [options]

commands:
  agent  [--config FILE] [--node-name N] [--pod-cidr CIDR] [--cluster-cidr CIDR] [--state-dir D] [--run-dir D]
         [--cni-socket S] [--proxy-mode none|iptables|nftables] [--manifests DIR] [--proxy-prefix KUBE]
         [--cluster-ip-ping reject|drop] [--proxy-min-sync-ms MS] [--log-level L] [--log-file F]
                     run the node agent until SIGTERM: the CNI service on a unix socket and, with a proxy
                     mode, Service rules for the Services and EndpointSlices in the manifest directory
  pod run NAME [--socket S | --cni-conf FILE] [--run-dir D] [--pid-ns] [-- CMD ARGS...]
                     make a pod sandbox (pause + CNI ADD through nodenet-cni), optionally start an app in it
  pod exec NAME [--run-dir D] -- CMD ARGS...
                     run a command inside a pod's namespaces
  pod app NAME [--run-dir D] -- CMD ARGS...
                     start another long-running app process in a pod (detached)
  pod ls [--run-dir D] pod rm NAME [--run-dir D]
                     list pods; remove one (apps killed, CNI DEL, pause stopped)
  trace [--netns NAME|PATH] [--mode auto|iptables|nftables] [--prefix KUBE] [--from-node] [--json] SRC PROTO DST [PORT]
                     trace a new connection's first packet through a node's live Service rules (PROTO tcp|udp|sctp|icmp)
  proxy status [--run-dir D] [--json]
                     what the node's proxy applied: Services and endpoints, last sync, rejected objects
  proxy cleanup [--netns NAME|PATH] [--prefix KUBE]
                     remove both proxy modes' rules from a namespace (kube-proxy --cleanup)
  demo [--keep] [--proxy-mode iptables|nftables]
                     a virtual node with pods on cbr0 (traffic, an app restart that keeps its IP) and a
                     ClusterIP Service that takes TCP connections but never answers a ping
  version            print the version
`;

export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    switch (cmd) {
      case 'agent':
        return await agentCommand(rest, deps.startAgent);
      case 'pod':
        return await podCommand(rest, deps.runner);
      case 'demo':
        return await demoCommand(rest);
      case 'trace':
        return await traceCommand(rest, { runner: deps.runner });
      case 'proxy':
        return await proxyCommand(rest, { runner: deps.runner, removeRules: deps.removeProxyRules });
      case 'version':
      case '--version':
        process.stdout.write(`nodenet ${VERSION}\n`);
        return 0;
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(USAGE);
        return cmd === undefined ? 2 : 0;
      default:
        process.stderr.write(`nodenet: unknown command ${JSON.stringify(cmd)}\n${USAGE}`);
        return 2;
    }
  } catch (e) {
    if (e instanceof FlagError) {
      process.stderr.write(`nodenet ${cmd}: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
