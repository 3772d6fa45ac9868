/**
 * `nodenet agent`: runs the node agent until SIGTERM/SIGINT.
 *
 *   nodenet agent [--config FILE] [--node-name N] [--pod-cidr CIDR] [--state-dir D] [--run-dir D] [--cni-socket S] ...
 *
 * The agent writes <runDir>/agent.ready once it serves CNI calls and has
 * replayed the DELs queued while it was down; it removes it when it stops.
 * Stopping (or crashing) never touches running pods: their namespaces, veths
 * and IPs stay, and a restarted agent picks up from its state dir.
 */
import { readFileSync } from 'node:fs';
import { ErrorCode, NodenetError } from '../errors/errors.js';
import { FLAG_KEYS, parseAgentConfig, type AgentConfig } from '../config/config.js';
import { only, parseFlags } from './flags.js';

export interface RunningAgent {
  stop(): Promise<void>;
}

export type StartAgent = (cfg: AgentConfig) => Promise<RunningAgent>;

export function agentConfigFromArgs(argv: readonly string[]): AgentConfig {
  const p = parseFlags(argv);
  only(p, ['config', ...Object.keys(FLAG_KEYS)]);
  let base: Record<string, unknown> = {};
  const file = p.flags.get('config');
  if (file) {
    try {
      base = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      throw new NodenetError(ErrorCode.InvalidConfig, `cannot read config ${file}: ${(e as Error).message}`, { cause: e });
    }
  }
  for (const [flag, key] of Object.entries(FLAG_KEYS)) {
    const v = p.flags.get(flag);
    if (v !== undefined) base[key] = key === 'mtu' || key === 'proxyMinSyncMs' ? Number(v) : v;
  }
  return parseAgentConfig(base);
}

export async function agentCommand(argv: readonly string[], start: StartAgent): Promise<number> {
  const cfg = agentConfigFromArgs(argv);
  const agent = await start(cfg);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await agent.stop();
  return 0;
}
