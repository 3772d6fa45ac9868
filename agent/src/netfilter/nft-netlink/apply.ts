/**
 * netfilter/nft-netlink/apply: applies an `nft -f` script as nodenet's own
 * nf_tables netlink batch when every line of it is one the encoder knows.
 *
 * Why: nft 1.0.6 dumps every chain of the kernel before it applies any
 * script that adds a rule or an element (1.2-1.7 s at 30,000 Services, all
 * of it kernel time), and libnftables keeps no cache between transactions.
 * We know what our table holds, so a small change needs no dump: we send the
 * messages ourselves. A full sync (`big`) too: nft's parser and evaluator
 * were half of its 10 s at 30,000 Services. Scripts with anything else are
 * left to `nft -f`.
 *
 * The batch is all-or-nothing, like `nft -f`. A kernel error is mapped back
 * to the script line of the message that caused it and raised as the same
 * NodenetError(NN_ERR_RULE_APPLY) the nft path raises, with the lines around
 * it in `details`.
 */
import { ErrorCode, NodenetError } from '../../errors/errors.js';
import { nftApplyError } from '../nft.js';
import { forEachNftCommand, parseNftScript, type NlCommand } from './commands.js';
import { BatchEncoder, encodeBatch, type EncodeOptions } from './encode.js';
import { NfnlSocket, strerror, type NetlinkAnswer } from './socket.js';

export type NetlinkApplyResult =
  | { readonly applied: true; readonly commands: number }
  /** Nothing was sent: line `line` is outside what the encoder knows. */
  | { readonly applied: false; readonly line: number; readonly reason: string };

export interface NftNetlinkOptions {
  /** Network namespace path to apply in (the current one when undefined). */
  readonly netns?: string;
  /** Scripts with more commands than this go to `nft -f` (unless applied with `big`). Default 20,000. */
  readonly maxCommands?: number;
}

export interface NftNetlinkApplyOptions {
  /**
   * A big script (a full sync: ~300,000 commands at 30,000 Services): no
   * command limit, and only the last command asks for an ack (errors are
   * reported whatever the flags; the last ack says the batch committed).
   */
  readonly big?: boolean;
}

let seqBase = (Date.now() & 0x3fffffff) >>> 0;

/** The script lines of failed messages, from the kernel's answers; throws NodenetError when anything failed. */
export function checkAnswers(
  script: string,
  /** The commands sent, or just their script lines (a big batch keeps no commands). */
  commands: readonly Pick<NlCommand, 'line'>[] | Int32Array,
  firstSeq: number,
  answers: readonly NetlinkAnswer[],
  acks: EncodeOptions['acks'] = 'all',
): void {
  const bySeq = new Map<number, NetlinkAnswer>();
  for (const a of answers) if (a.error !== 0 || !bySeq.has(a.seq)) bySeq.set(a.seq, a);
  const failures: string[] = [];
  const begin = bySeq.get(firstSeq);
  // An error on BATCH_BEGIN: the commit itself failed (all messages were accepted, then undone).
  if (begin && begin.error !== 0) failures.push(`netlink:1:1: Error: Could not commit the batch: ${strerror(-begin.error)}${begin.message ? ` (${begin.message})` : ''}`);
  let missing = 0;
  if (acks === 'last') {
    // Only errors answer, and the last command's ack once the batch committed.
    for (const a of bySeq.values()) {
      const i = a.seq - firstSeq - 1;
      const line = i >= 0 && i < commands.length ? lineOf(commands, i) : 0;
      if (a.error !== 0 && line) failures.push(`netlink:${line}:1: Error: Could not process rule: ${strerror(-a.error)}${a.message ? ` (${a.message})` : ''}`);
    }
    if (!bySeq.has(firstSeq + commands.length)) missing = 1;
  } else {
    for (let i = 0; i < commands.length; i++) {
      const a = bySeq.get(firstSeq + 1 + i);
      if (!a) missing++;
      else if (a.error !== 0) failures.push(`netlink:${lineOf(commands, i)}:1: Error: Could not process rule: ${strerror(-a.error)}${a.message ? ` (${a.message})` : ''}`);
    }
  }
  if (failures.length) throw nftApplyError(script, failures.join('\n'), 1, 3, 'nf_tables netlink batch');
  if (missing) {
    // Acks lost (an overrun): whether the batch committed is unknown; the caller's next sync must be full.
    throw new NodenetError(ErrorCode.RuleApply, `nf_tables netlink batch: ${missing} of ${commands.length} messages unanswered; state unknown`);
  }
}

function lineOf(commands: readonly Pick<NlCommand, 'line'>[] | Int32Array, i: number): number {
  const c = commands[i]!;
  return typeof c === 'number' ? c : c.line;
}

/** An idle socket is closed after this long (it keeps its namespace alive). */
const IDLE_CLOSE_MS = 5_000;

export class NftNetlink {
  private readonly socket: NfnlSocket;
  private idle: NodeJS.Timeout | null = null;

  constructor(private readonly opts: NftNetlinkOptions = {}) {
    this.socket = new NfnlSocket(opts.netns);
  }

  /** Closes the kept socket now (it reopens on the next apply). */
  close(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    this.socket.close();
  }

  /**
   * Applies `script` through netlink when it can.
   * @throws NodenetError(NN_ERR_RULE_APPLY) when the kernel rejects the batch (nothing applied).
   * @throws NodenetError(NN_ERR_NETLINK) when the socket fails (nothing applied, or unknown for a lost answer).
   */
  apply(script: string, opts: NftNetlinkApplyOptions = {}): NetlinkApplyResult {
    if (opts.big) return this.applyBig(script);
    const parsed = parseNftScript(script);
    if (!parsed.ok) return { applied: false, line: parsed.line, reason: `${parsed.reason}: ${parsed.text.slice(0, 200)}` };
    const max = opts.big ? Infinity : (this.opts.maxCommands ?? 20_000);
    if (parsed.commands.length > max) return { applied: false, line: 0, reason: `${parsed.commands.length} commands (more than ${max})` };
    if (parsed.commands.length === 0) return { applied: true, commands: 0 };
    const firstSeq = seqBase;
    seqBase = (seqBase + parsed.commands.length + 2) & 0x3fffffff;
    const acks: EncodeOptions['acks'] = opts.big ? 'last' : 'all';
    const batch = encodeBatch(parsed.commands, firstSeq, { acks });
    const answers = this.socket.send(batch.bytes);
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => this.close(), IDLE_CLOSE_MS).unref();
    checkAnswers(script, parsed.commands, firstSeq, answers, acks);
    return { applied: true, commands: parsed.commands.length };
  }

  /** A big script, parsed and encoded a line at a time (only the script line of each message is kept). */
  private applyBig(script: string): NetlinkApplyResult {
    const firstSeq = seqBase;
    // ~1.8 bytes of netlink per byte of script for the render's lines.
    const enc = new BatchEncoder(firstSeq, { acks: 'last' }, Math.ceil(script.length * 2));
    let lines = new Int32Array(1024);
    let n = 0;
    const r = forEachNftCommand(script, (c) => {
      if (n === lines.length) {
        const l = new Int32Array(n * 2);
        l.set(lines);
        lines = l;
      }
      lines[n++] = c.line;
      enc.add(c);
    });
    if (!r.ok) return { applied: false, line: r.line, reason: `${r.reason}: ${r.text.slice(0, 200)}` };
    if (n === 0) return { applied: true, commands: 0 };
    seqBase = (seqBase + n + 2) & 0x3fffffff;
    const batch = enc.finish();
    const answers = this.socket.send(batch.bytes);
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => this.close(), IDLE_CLOSE_MS).unref();
    checkAnswers(script, lines.subarray(0, n), firstSeq, answers, 'last');
    return { applied: true, commands: n };
  }
}
