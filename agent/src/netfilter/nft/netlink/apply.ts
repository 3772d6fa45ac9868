/**
 * netfilter/nft/netlink/apply: applies an `nft -f` script as nodenet's own
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
import { ErrorCode, NodenetError } from '../../../../../lib/errors/errors.js';
import { nftApplyError } from '../nft.js';
import { parseNftScript, parseOneLine, type NlCommand } from './commands.js';
import { BatchEncoder, encodeBatch, type EncodeOptions } from './encode.js';
import { chainNames, dumpChainsRequest, dumpSetsRequest, firstError, getObjectRequest, getTableRequest, NFPROTO, objectFound, setNames, tableFound, type SetName } from './dump.js';
import { NfnlSocket, strerror, type NetlinkAnswer } from './socket.js';

export type NetlinkApplyResult =
  | {
      readonly applied: true;
      readonly commands: number;
      /** Milliseconds the kernel took over the batch (send to last answer). */
      readonly kernelMs?: number;
    }
  /** Nothing was sent: line `line` is outside what the encoder knows. */
  | { readonly applied: false; readonly line: number; readonly reason: string };

/**
 * A transaction handed over line by line (the nftables render's sink):
 * text lines, parsed here, or commands the caller built itself, never
 * parsed. Lines are numbered in the order they come, as the script's.
 */
export interface CommandSink {
  text(line: string): void;
  command(cmd: NlCommand): void;
  /** Until endTable(table), commands of `table` make a transaction of their own (TableBatches). */
  beginTable?(table: string): void;
  endTable?(table: string): void;
}

/**
 * A full sync streamed into one big batch as it is rendered: nothing of the
 * script is kept but each command's line number; the first line outside the
 * encoder's shapes stops the encoding (the batch is then not sent).
 */
export class BigBatch implements CommandSink {
  readonly firstSeq: number;
  private readonly enc: BatchEncoder;
  private lines = new Int32Array(1 << 16);
  private n = 0;
  private line = 0;
  unsupported: { readonly line: number; readonly text: string; readonly reason: string } | null = null;

  constructor(firstSeq: number, sizeHint: number) {
    this.firstSeq = firstSeq;
    this.enc = new BatchEncoder(firstSeq, { acks: 'last' }, sizeHint);
  }

  text(l: string): void {
    this.line++;
    if (this.unsupported) return;
    const p = parseOneLine(this.line, l);
    if (!p.ok) this.unsupported = { line: this.line, text: l, reason: p.reason };
    else if (p.cmd) this.put(this.line, p.cmd);
  }

  command(c: NlCommand): void {
    this.line++;
    if (!this.unsupported) this.put(this.line, c);
  }

  /** A command of script line `line` (TableBatches numbers the lines of all its batches). */
  put(line: number, c: NlCommand): void {
    if (this.n === this.lines.length) {
      const l = new Int32Array(this.n * 2);
      l.set(this.lines);
      this.lines = l;
    }
    this.lines[this.n++] = line;
    this.enc.add(c);
  }

  /** @internal what NftNetlink.sendBig sends. */
  finish(): { bytes: Buffer; count: number; lines: Int32Array } {
    const b = this.enc.finish();
    return { bytes: b.bytes, count: this.n, lines: this.lines.subarray(0, this.n) };
  }
}

/** Seq numbers a table's batch of TableBatches may use (4M messages; a full sync at 30,000 Services has 300,000 in all). */
const TABLE_SEQ_SPAN = 1 << 22;

/** How TableBatches reaches the socket: a send from a worker thread, and what the kernel has answered so far. */
export interface TableSender {
  /** Resolves when sendto(2) returned (null) or failed (its message); the answers stay queued for poll(). */
  start(bytes: Buffer): Promise<string | null>;
  /** Every answer queued now, without waiting. */
  poll(): NetlinkAnswer[];
}

/** One table's batch, encoded, with its seq range and script lines. */
interface TableBatch {
  readonly table: string;
  readonly firstSeq: number;
  readonly lines: Int32Array;
  readonly bytes: Buffer;
}

/** Commands between two looks at the batch in flight (a recv(2) that does not wait, about a microsecond). */
const POLL_EVERY = 2048;

/**
 * A full sync streamed into batches, committed table by table where the render says so (RenderSink's
 * beginTable/endTable, the sharded layout): between the two calls, commands of that table go to a batch of
 * its own; everything else goes to one batch, sent last. A finished table's batch is sent from a worker
 * thread while the render goes on, one at a time: the kernel takes nf_tables batches one at a time anyway,
 * and a second sendto(2) waiting for its mutex spins on the CPU the render needs (measured: the render took
 * twice as long with every table's send started at once). So the batch in flight is looked at every
 * POLL_EVERY commands: once the kernel has answered it (it answers a batch only when done with it), the
 * next is sent. Each batch is all-or-nothing; the whole is not (see NftablesBackend.sync).
 * Without those calls it is one batch, as BigBatch.
 */
export class TableBatches implements CommandSink {
  private line = 0;
  private readonly tableHint: number;
  private readonly rest: BigBatch;
  private open: { table: string; batch: BigBatch } | null = null;
  private nextSeq: number;
  private sinceLook = 0;
  /** Tables encoded, not sent yet. */
  private readonly queued: TableBatch[] = [];
  /** The table whose batch is in the kernel now. */
  private inFlight: TableBatch | null = null;
  /** Tables sent: their sends (resolved when sendto returned). */
  readonly sent: { readonly batch: TableBatch; readonly done: Promise<string | null> }[] = [];
  /** The kernel's answers read so far. */
  readonly answers: NetlinkAnswer[] = [];
  unsupported: { readonly line: number; readonly text: string; readonly reason: string } | null = null;

  constructor(
    firstSeq: number,
    sizeHint: number,
    private readonly sender: TableSender,
    /** How many tables the bytes of sizeHint spread over (each batch reserves its share, the rest batch too). */
    tables = 1,
  ) {
    // Reserved, not written: but V8 counts a Buffer's bytes as external memory, and nine full-size reserves
    // made it collect the whole heap again and again during the render (measured: 1.5 s more at 30,000 Services).
    this.tableHint = Math.max(1 << 16, Math.ceil((sizeHint / Math.max(1, tables)) * 1.25));
    this.rest = new BigBatch(firstSeq, tables > 1 ? this.tableHint : sizeHint);
    this.nextSeq = (firstSeq + TABLE_SEQ_SPAN) & 0x3fffffff;
  }

  /** The seq after every batch's (the next transaction's first). */
  get seqEnd(): number {
    return this.nextSeq;
  }

  get restBatch(): BigBatch {
    return this.rest;
  }

  /** Tables encoded but not sent (sendTables sends them in turn). */
  takeQueued(): TableBatch[] {
    return this.queued.splice(0);
  }

  text(l: string): void {
    this.line++;
    if (this.unsupported) return;
    const p = parseOneLine(this.line, l);
    if (!p.ok) this.unsupported = { line: this.line, text: l, reason: p.reason };
    else if (p.cmd) this.route(p.cmd);
  }

  command(c: NlCommand): void {
    this.line++;
    if (!this.unsupported) this.route(c);
  }

  beginTable(table: string): void {
    if (this.unsupported) return;
    this.open = { table, batch: new BigBatch(this.nextSeq, this.tableHint) };
    this.nextSeq = (this.nextSeq + TABLE_SEQ_SPAN) & 0x3fffffff;
  }

  endTable(table: string): void {
    const o = this.open;
    this.open = null;
    if (!o || o.table !== table || this.unsupported) return;
    const f = o.batch.finish();
    if (f.count > 0) this.queued.push({ table, firstSeq: o.batch.firstSeq, lines: f.lines, bytes: f.bytes });
    this.pump();
  }

  private route(c: NlCommand): void {
    if (this.open && c.table === this.open.table) this.open.batch.put(this.line, c);
    else this.rest.put(this.line, c);
    if (++this.sinceLook >= POLL_EVERY && (this.inFlight || this.queued.length)) this.pump();
  }

  /** Sends the next queued table once the kernel is done with the one in flight. */
  private pump(): void {
    this.sinceLook = 0;
    if (this.inFlight) {
      for (const a of this.sender.poll()) this.answers.push(a);
      const f = this.inFlight;
      if (!this.answers.some((a) => a.seq >= f.firstSeq && a.seq <= f.firstSeq + f.lines.length + 1)) return;
      this.inFlight = null;
    }
    const next = this.queued.shift();
    if (!next) return;
    this.inFlight = next;
    this.sent.push({ batch: next, done: this.sender.start(next.bytes) });
  }
}

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
  /** The script, or an object that gives it only when read (an error report). */
  script: string | { readonly text: string },
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
  if (failures.length) throw nftApplyError(typeof script === 'string' ? script : script.text, failures.join('\n'), 1, 3, 'nf_tables netlink batch');
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
    const t1 = performance.now();
    const answers = this.socket.send(batch.bytes);
    const t2 = performance.now();
    this.armIdle();
    checkAnswers(script, parsed.commands, firstSeq, answers, acks);
    return { applied: true, commands: parsed.commands.length, kernelMs: t2 - t1 };
  }

  /**
   * Whether the table exists, asked of the kernel directly (nft 1.0.6
   * builds its whole cache to list tables: 13 s at 30,000 Services).
   * @throws NodenetError(NN_ERR_NETLINK) when the kernel answers with an error other than ENOENT
   */
  tableExists(family: keyof typeof NFPROTO, table: string): boolean {
    return this.ask(`GETTABLE ${family} ${table}`, () => tableFound(this.socket.request(getTableRequest(this.nextSeq(), NFPROTO[family], table))));
  }

  /** Whether one chain, set or map exists (false when its table does not), asked of the kernel: no nft process, no cache. */
  objectExists(family: keyof typeof NFPROTO, table: string, kind: 'chain' | 'set' | 'map', name: string): boolean {
    return this.ask(`GET ${kind} ${family} ${table} ${name}`, () => objectFound(this.socket.request(getObjectRequest(this.nextSeq(), NFPROTO[family], table, kind, name)), kind));
  }

  /** The names of the table's chains and named sets (no rules, no elements), or null when it does not exist. */
  listNames(family: keyof typeof NFPROTO, table: string): { chains: string[]; sets: SetName[] } | null {
    if (!this.tableExists(family, table)) return null;
    return this.keep(() => {
      const sets = this.socket.request(dumpSetsRequest(this.nextSeq(), NFPROTO[family], table));
      const err = firstError(sets);
      if (err === -2) return null; // deleted in between
      if (err) throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: dump of the sets of ${family} ${table}: ${strerror(-err)}`);
      const chains = this.socket.request(dumpChainsRequest(this.nextSeq(), NFPROTO[family]));
      const cerr = firstError(chains);
      if (cerr) throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: dump of the ${family} chains: ${strerror(-cerr)}`);
      return { chains: chainNames(chains, table), sets: setNames(sets, table) };
    });
  }

  /**
   * listNames of several tables with one dump of the family's chains (a dump of every chain costs ~2 s at 90,000
   * chains: once, not once per table). Absent tables map to null.
   */
  listNamesMany(family: keyof typeof NFPROTO, tables: readonly string[]): Map<string, { chains: string[]; sets: SetName[] } | null> {
    const out = new Map<string, { chains: string[]; sets: SetName[] } | null>();
    const present = tables.filter((t) => this.tableExists(family, t));
    for (const t of tables) out.set(t, null);
    if (!present.length) return out;
    return this.keep(() => {
      const chains = this.socket.request(dumpChainsRequest(this.nextSeq(), NFPROTO[family]));
      const cerr = firstError(chains);
      if (cerr) throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: dump of the ${family} chains: ${strerror(-cerr)}`);
      for (const t of present) {
        const sets = this.socket.request(dumpSetsRequest(this.nextSeq(), NFPROTO[family], t));
        const err = firstError(sets);
        if (err === -2) continue; // deleted in between
        if (err) throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: dump of the sets of ${family} ${t}: ${strerror(-err)}`);
        out.set(t, { chains: chainNames(chains, t), sets: setNames(sets, t) });
      }
      return out;
    });
  }

  private nextSeq(): number {
    const s = seqBase;
    seqBase = (seqBase + 1) & 0x3fffffff;
    return s;
  }

  /** keep(f), with the kernel's errno errors (found()'s) as NodenetError(NN_ERR_NETLINK) naming the request. */
  private ask<T>(what: string, f: () => T): T {
    try {
      return this.keep(f);
    } catch (e) {
      if (e instanceof NodenetError) throw e;
      throw new NodenetError(ErrorCode.Netlink, `nf_tables netlink: ${what}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Runs `f` on the kept socket and re-arms its idle close. */
  private keep<T>(f: () => T): T {
    const r = f();
    this.armIdle();
    return r;
  }

  /**
   * (Re)starts the idle close. Its own method on purpose: a timer made inside
   * applyBig would close over that call's scope (the encoder's 30-90 MB
   * buffer and the script) and keep it alive until it fired.
   */
  private armIdle(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => this.close(), IDLE_CLOSE_MS).unref();
  }

  /** A batch a full sync is rendered into (BigBatch), then sent with sendBig. `sizeHint`: bytes to reserve. */
  beginBig(sizeHint = 1 << 20): BigBatch {
    return new BigBatch(seqBase, sizeHint);
  }

  /**
   * Sends a BigBatch (nothing, with applied: false, when a line was outside
   * the encoder's shapes). `script` gives the whole text for an error report
   * only when the kernel refused something.
   */
  sendBig(b: BigBatch, script: () => string): NetlinkApplyResult {
    if (b.unsupported) return { applied: false, line: b.unsupported.line, reason: `${b.unsupported.reason}: ${b.unsupported.text.slice(0, 200)}` };
    const f = b.finish();
    if (f.count === 0) return { applied: true, commands: 0 };
    seqBase = (b.firstSeq + f.count + 2) & 0x3fffffff;
    const t1 = performance.now();
    const answers = this.socket.send(f.bytes);
    const t2 = performance.now();
    this.armIdle();
    checkAnswers({ get text() { return script(); } }, f.lines, b.firstSeq, answers, 'last');
    return { applied: true, commands: f.count, kernelMs: t2 - t1 };
  }

  /** Batches a full sync is rendered into, table by table where the render says so (TableBatches); sent with sendTables. */
  beginTables(sizeHint = 1 << 20, tables = 1): TableBatches {
    this.socket.prepare(sizeHint);
    return new TableBatches(seqBase, sizeHint, { start: (bytes) => this.socket.sendInBackground(bytes), poll: () => this.socket.collect() }, tables);
  }

  /**
   * Waits for the table in flight, sends the tables still queued, then the rest as one batch, and checks every
   * answer. Nothing more is sent after a line outside the encoder's shapes (applied: false; tables sent before
   * it stay committed) or a failed send.
   * kernelMs is the time spent on the kernel after the render: most shards' batches were processed while it ran.
   * @throws NodenetError(NN_ERR_RULE_APPLY) naming the failed lines (the tables whose batch failed are unchanged; the others committed)
   */
  async sendTables(tb: TableBatches, script: () => string): Promise<NetlinkApplyResult> {
    const t1 = performance.now();
    seqBase = tb.seqEnd;
    const report = { get text() { return script(); } };
    const sendErrors = (await Promise.all(tb.sent.map((s) => s.done))).filter((e): e is string => e !== null);
    this.armIdle();
    // The tables' answers first: send() empties the socket before it sends.
    const answers = [...tb.answers, ...this.socket.collect()];
    /** A batch's answers, by its seq range; throws naming its failed lines. */
    const check = (b: { readonly firstSeq: number; readonly lines: Int32Array }) =>
      checkAnswers(report, b.lines, b.firstSeq, answers.filter((a) => a.seq >= b.firstSeq && a.seq <= b.firstSeq + b.lines.length + 1), 'last');
    let commands = 0;
    for (const s of tb.sent) {
      check(s.batch);
      commands += s.batch.lines.length;
    }
    if (sendErrors.length) throw new NodenetError(ErrorCode.Netlink, sendErrors.join('; '));
    // Nothing more goes after a failure (the check threw) or a line outside the shapes.
    if (tb.unsupported) {
      const u = tb.unsupported;
      return { applied: false, line: u.line, reason: `${u.reason}: ${u.text.slice(0, 200)}` };
    }
    for (const q of tb.takeQueued()) {
      for (const a of this.socket.send(q.bytes)) answers.push(a);
      check(q);
      commands += q.lines.length;
    }
    const f = tb.restBatch.finish();
    if (f.count > 0) {
      for (const a of this.socket.send(f.bytes)) answers.push(a);
      check({ firstSeq: tb.restBatch.firstSeq, lines: f.lines });
      commands += f.count;
    }
    return { applied: true, commands, kernelMs: performance.now() - t1 };
  }

  /** A big script, parsed and encoded a line at a time into a BigBatch (only the script line of each message is kept). */
  private applyBig(script: string): NetlinkApplyResult {
    // ~1.8 bytes of netlink per byte of script for the render's lines.
    const b = this.beginBig(Math.ceil(script.length * 2));
    for (let at = 0; at < script.length; ) {
      let nl = script.indexOf('\n', at);
      if (nl < 0) nl = script.length;
      b.text(script.slice(at, nl));
      at = nl + 1;
    }
    return this.sendBig(b, () => script);
  }
}
