/**
 * agent: builds and runs one node's agent from real dependencies. Called only
 * from main.ts (the composition root).
 *
 * Start order matters: state dirs, then the netlink socket of the node
 * namespace, the IPAM store, the sandbox, the CNI server, and only then the
 * replay of DELs that the shim queued while no agent was running (they need
 * the sandbox), then the Service proxy when a proxy mode is set (its first
 * sync waits for the source's initial lists), and last the ready marker.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AgentConfig } from './config/config.js';
import { createLogger, type Logger } from './log/log.js';
import { F } from './log/fields.js';
import { ExecaRunner } from './exec/runner.js';
import { openNetlink } from './netlink/netlink.js';
import { toNetnsPath } from './netns/netns.js';
import { createDiskIpam } from './ipam/ipam.js';
import { Sandbox } from './sandbox/sandbox.js';
import { IpamAdapter } from './sandbox/ipam-adapter.js';
import { IptablesMasquerade } from './sandbox/masquerade.js';
import { ProcSysctl } from './sandbox/sysctl.js';
import { DiskAttachmentStore } from './sandbox/record-store.js';
import { SandboxCniHandler } from './sandbox/cni-handler.js';
import { startCniServer } from './cniserver/server.js';
import { deletionQueueDirFor, replayDeletions } from './cniserver/replay-deletions.js';
import type { RunningAgent } from './cli/agent-cmd.js';
import { ErrorCode, NodenetError } from './errors/errors.js';
import { proxyStatusFile, startProxyHost, type ProxyHost } from './proxy-host.js';

export async function startAgent(cfg: AgentConfig, logger?: Logger): Promise<RunningAgent> {
  const log = (logger ?? createLogger({ level: cfg.logLevel as 'info', ...(cfg.logFile ? { destination: cfg.logFile } : {}) })).child({ [F.node]: cfg.nodeName });
  if (cfg.proxyMode === 'ipvs') throw new NodenetError(ErrorCode.InvalidConfig, 'config proxyMode: ipvs is not available yet (iptables, nftables or none)');
  const readyFile = `${cfg.runDir}/agent.ready`;
  rmSync(readyFile, { force: true });
  mkdirSync(cfg.stateDir, { recursive: true, mode: 0o700 });
  mkdirSync(cfg.runDir, { recursive: true, mode: 0o700 });

  let ready = false;
  const runner = new ExecaRunner();
  const node = openNetlink();
  const sandbox = new Sandbox({
    node,
    openPod: (p) => openNetlink(p),
    resolveNetns: toNetnsPath,
    ipam: new IpamAdapter(createDiskIpam(`${cfg.stateDir}/ipam`, { log }), cfg.podCIDR),
    masq: new IptablesMasquerade(runner),
    sysctl: new ProcSysctl(),
    records: new DiskAttachmentStore(`${cfg.stateDir}/attachments`),
    log: log.child({ [F.subsys]: 'sandbox' }),
  });
  const handler = new SandboxCniHandler({ sandbox, defaultMtu: cfg.mtu, ready: () => ready, log: log.child({ [F.subsys]: 'cni' }) });
  const server = await startCniServer({ socketPath: cfg.cniSocket, handler, log });
  const replay = await replayDeletions(deletionQueueDirFor(cfg.cniSocket), handler, log);
  let proxy: ProxyHost | null = null;
  if (cfg.proxyMode !== 'none') {
    proxy = await startProxyHost({
      mode: cfg.proxyMode,
      nodeName: cfg.nodeName,
      clusterCIDR: cfg.clusterCIDR,
      prefix: cfg.proxyPrefix,
      runner,
      log,
      manifestsDir: cfg.manifestsDir,
      statusFile: proxyStatusFile(cfg.runDir),
      minSyncIntervalMs: cfg.proxyMinSyncMs,
      clusterIPPing: cfg.clusterIPPing,
    });
  }
  ready = true;
  writeFileSync(readyFile, `${process.pid}\n`);
  log.info({ socket: cfg.cniSocket, podCIDR: cfg.podCIDR, replay }, 'agent ready');

  return {
    async stop() {
      ready = false;
      rmSync(readyFile, { force: true });
      await proxy?.stop();
      await server.close();
      node.close();
      log.info('agent stopped');
    },
  };
}
