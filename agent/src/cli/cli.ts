/**
 * cli: the `nodenet` command. Each subcommand lives in its own file (parse
 * flags, call, print: no logic of its own) and gets its real dependencies
 * from main.ts, which takes them from node/compose.ts.
 *
 * Exit codes: 0 done; 1 the command failed (the message says why); 2 a usage
 * error (the message names the bad argument, then the usage).
 */
import type { AgentConfig } from '../config/config.js';
import type { Runner } from '../exec/runner.js';
import { isNodenetError } from '../../../lib/errors/errors.js';
import type { Lab } from '../lab/lab.js';
import { AGENT_USAGE, agentCommand, type RunningAgent } from './agent-cmd.js';
import { BENCH_USAGE, benchCommand } from './bench-cmd.js';
import { CONTROL_PLANE_USAGE, controlPlaneCommand, type ControlPlaneCmdDeps } from './control-plane-cmd.js';
import { DEMO_USAGE, demoCommand } from './demo-cmd.js';
import { DNS_USAGE, dnsCommand } from './dns-cmd.js';
import { CommandError } from './errors.js';
import { FlagError } from './flags.js';
import { labCommand, LAB_USAGE } from './lab-cmd.js';
import { POD_USAGE, podCommand } from './pod-cmd.js';
import { PROXY_USAGE, proxyCommand, type ProxyCmdDeps } from './proxy-cmd.js';
import { SERVE_USAGE, serveCommand } from './serve-cmd.js';
import { TRACE_USAGE, traceCommand, type TraceDeps } from './trace-cmd.js';

export const VERSION = '0.1.0';

export interface CliDeps {
  readonly runner: Runner;
  readonly startAgent: (cfg: AgentConfig) => Promise<RunningAgent>;
  readonly startControlPlane: ControlPlaneCmdDeps['startControlPlane'];
  readonly removeProxyRules: ProxyCmdDeps['removeRules'];
  readonly localAddresses: TraceDeps['localAddresses'];
  readonly readNetwork: NonNullable<TraceDeps['readNetwork']>;
  readonly labNodes: NonNullable<TraceDeps['labNodes']>;
  readonly createLab: (prefix: string) => Promise<Lab>;
  /** Removes what dead labs left (lab/leftovers.ts); returns what it removed, for the message. */
  readonly cleanupLabs: () => Promise<readonly string[]>;
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
}

export const USAGE = `usage: nodenet <command> [options]     (nodenet <command> -h for its options)

commands:
  agent     run the node agent until SIGTERM: the CNI service on a unix socket and, with a proxy mode,
            Service rules for the Services and EndpointSlices in the manifest directory
  control-plane
            serve the Kubernetes API (the embedded default: SQLite, TLS, tokens) for kubectl and the agents
  pod       pods without a runtime: run, app, exec, ls, rm
  trace     trace a new connection's first packet through a node's live Service rules
  proxy     what the node's proxy applied (status); remove its rules (cleanup)
  demo      a virtual node with pods on cbr0 and a ClusterIP Service that takes TCP but never answers a ping
  lab       labs (virtual clusters out of network namespaces): cleanup of what dead ones left
  serve     a small test server for pods (TCP/UDP/HTTP: who answered, client IP, echo, readiness, exit)
  dns       the cluster's DNS server (CoreDNS's job; the control plane's coredns Deployment runs it)
  bench     benchmarks: lookup (the cost of finding a Service against the number of Services, per proxy mode)
  version   print the version
`;

const HELP: Readonly<Record<string, string>> = {
  agent: AGENT_USAGE,
  'control-plane': CONTROL_PLANE_USAGE,
  pod: POD_USAGE,
  trace: TRACE_USAGE,
  proxy: PROXY_USAGE,
  demo: DEMO_USAGE,
  lab: LAB_USAGE,
  serve: SERVE_USAGE,
  dns: DNS_USAGE,
  bench: BENCH_USAGE,
  version: 'usage: nodenet version',
};

export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    switch (cmd) {
      case 'agent':
        return await agentCommand(rest, deps.startAgent, deps.stdout);
      case 'control-plane':
        return await controlPlaneCommand(rest, { startControlPlane: deps.startControlPlane, version: VERSION, stdout: deps.stdout, ...(deps.stderr ? { stderr: deps.stderr } : {}) });
      case 'pod':
        return await podCommand(rest, deps);
      case 'demo':
        return await demoCommand(rest, deps);
      case 'trace':
        return await traceCommand(rest, deps);
      case 'proxy':
        return await proxyCommand(rest, { removeRules: deps.removeProxyRules, stdout: deps.stdout, stderr: deps.stderr });
      case 'lab':
        return await labCommand(rest, deps);
      case 'serve':
        return await serveCommand(rest, { stdout: deps.stdout });
      case 'dns':
        return await dnsCommand(rest, { stdout: deps.stdout });
      case 'bench':
        return await benchCommand(rest, deps);
      case 'version':
      case '--version':
        if (rest.length && rest[0] !== '-h' && rest[0] !== '--help') throw new FlagError(`unexpected argument ${JSON.stringify(rest[0])}`);
        deps.stdout(rest.length ? `${HELP['version']}\n` : `nodenet ${VERSION}\n`);
        return 0;
      case 'help': {
        const topic = rest[0];
        if (topic !== undefined && !HELP[topic]) throw new FlagError(`no command ${JSON.stringify(topic)}`);
        deps.stdout(topic ? `${HELP[topic]}\n` : USAGE);
        return 0;
      }
      case undefined:
      case '-h':
      case '--help':
        deps.stdout(USAGE);
        return cmd === undefined ? 2 : 0;
      default:
        deps.stderr(`nodenet: unknown command ${JSON.stringify(cmd)}\n${USAGE}`);
        return 2;
    }
  } catch (e) {
    if (e instanceof FlagError) {
      const usage = cmd !== undefined ? HELP[cmd] : undefined;
      deps.stderr(`nodenet ${cmd}: ${e.message}\n${usage ? `${usage}\n` : ''}`);
      return 2;
    }
    if (e instanceof CommandError || isNodenetError(e)) {
      deps.stderr(`nodenet ${cmd}: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
