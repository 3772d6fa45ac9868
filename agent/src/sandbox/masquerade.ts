/**
 * The bridge plugin's ipMasq: per attachment, a nat chain that accepts
 * traffic to the pod's own subnet and masquerades the rest (but multicast),
 * jumped to from POSTROUTING for the pod's source address. One
 * iptables-restore per change; DEL reads the table once to stay idempotent.
 * It runs in the agent's own namespace (the node).
 */
import { createHash } from 'node:crypto';
import type { Runner } from '../exec/runner.js';
import type { Masquerade } from './deps.js';

export function masqChainName(id: string, ifName: string): string {
  return `NN-MASQ-${createHash('sha256').update(`${id}/${ifName}`).digest('hex').slice(0, 16).toUpperCase()}`;
}

export class IptablesMasquerade implements Masquerade {
  constructor(private readonly runner: Runner, private readonly restore = 'iptables-restore', private readonly save = 'iptables-save') {}

  private comment(a: { id: string; network: string }): string {
    return `name: "${a.network}" id: "${a.id}"`.replace(/"/g, '\\"');
  }

  async add(a: { id: string; ifName: string; network: string; ip: string; subnet: string }): Promise<void> {
    const chain = masqChainName(a.id, a.ifName);
    const c = `"${this.comment(a)}"`;
    const present = (await this.runner.run([this.save, '-t', 'nat'])).stdout.includes(`-j ${chain}`);
    const lines = [
      '*nat',
      `:${chain} - [0:0]`,
      `-A ${chain} -d ${a.subnet} -m comment --comment ${c} -j ACCEPT`,
      `-A ${chain} ! -d 224.0.0.0/4 -m comment --comment ${c} -j MASQUERADE`,
      ...(present ? [] : [`-A POSTROUTING -s ${a.ip}/32 -m comment --comment ${c} -j ${chain}`]),
      'COMMIT',
      '',
    ];
    await this.runner.run([this.restore, '--noflush', '-w'], { input: lines.join('\n') });
  }

  async del(a: { id: string; ifName: string; network: string; ip: string }): Promise<void> {
    const chain = masqChainName(a.id, a.ifName);
    const saved = (await this.runner.run([this.save, '-t', 'nat'], { allowFailure: true })).stdout;
    if (!saved.includes(`:${chain} `)) return;
    const jumps = saved.split('\n').filter((l) => l.startsWith('-A POSTROUTING ') && l.endsWith(`-j ${chain}`));
    const lines = ['*nat', `:${chain} - [0:0]`, ...jumps.map((l) => `-D${l.slice(2)}`), `-X ${chain}`, 'COMMIT', ''];
    await this.runner.run([this.restore, '--noflush', '-w'], { input: lines.join('\n') });
  }
}
