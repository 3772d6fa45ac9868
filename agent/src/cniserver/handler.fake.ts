/**
 * A CniHandler for tests that behaves like a strict agent without touching
 * the kernel: it parses every config with the real parser (so it rejects what
 * the agent would, with the same CNI codes), keeps the attachments it ADDed,
 * refuses a second ADD of the same attachment, lets DEL of an unknown one
 * succeed (DEL is idempotent), and CHECKs against what it holds. ADD answers
 * with a fixed address plan encoded in the config's cniVersion.
 * Tests can make any command fail once with `failNext`.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { parseBridgeNetConf } from '../cnitypes/netconf.js';
import { encodeResult, type CniResult } from '../cnitypes/result.js';
import type { CniCallRequest, CniHandler } from './handler.js';

export type FakeCommand = 'add' | 'del' | 'check' | 'status' | 'gc';

export class FakeCniHandler implements CniHandler {
  readonly calls: { cmd: FakeCommand; req: CniCallRequest }[] = [];
  readonly attachments = new Map<string, CniResult>();
  private readonly failures = new Map<FakeCommand, unknown>();
  private nextHost = 2;
  /** When false, STATUS answers 50 (plugin not available). */
  ready = true;

  /** The next call of `cmd` throws `err` (a NodenetError, an Error, anything). */
  failNext(cmd: FakeCommand, err: unknown): void {
    this.failures.set(cmd, err);
  }

  async add(req: CniCallRequest): Promise<Uint8Array> {
    const conf = this.enter('add', req);
    const key = `${conf.name}/${req.containerId}/${req.ifName}`;
    if (this.attachments.has(key)) throw new NodenetError(ErrorCode.LinkExists, `attachment ${key} already exists`);
    const host = this.nextHost++;
    const result: CniResult = {
      interfaces: [{ name: conf.bridge, mac: '0a:58:0a:f4:01:01' }, { name: req.ifName, mac: `0a:58:0a:f4:01:${host.toString(16).padStart(2, '0')}`, sandbox: req.netns }],
      ips: [{ address: `10.244.1.${host}/24`, gateway: '10.244.1.1', interface: 1 }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.244.1.1' }],
      dns: {},
    };
    this.attachments.set(key, result);
    return new TextEncoder().encode(encodeResult(result, conf.cniVersion));
  }

  async del(req: CniCallRequest): Promise<void> {
    const conf = this.enter('del', req);
    this.attachments.delete(`${conf.name}/${req.containerId}/${req.ifName}`);
  }

  async check(req: CniCallRequest): Promise<void> {
    const conf = this.enter('check', req);
    const have = this.attachments.get(`${conf.name}/${req.containerId}/${req.ifName}`);
    if (!have) throw new NodenetError(ErrorCode.UnknownContainer, `no attachment ${req.containerId}/${req.ifName}`);
    if (!conf.prevResult) throw new NodenetError(ErrorCode.InvalidConfig, 'prevResult: is required for CHECK');
    const want = conf.prevResult.ips.map((i) => i.address).join(',');
    const got = have.ips.map((i) => i.address).join(',');
    if (want !== got) throw new NodenetError(ErrorCode.CheckFailed, `addresses differ: prevResult ${want}, have ${got}`);
  }

  async status(req: CniCallRequest): Promise<void> {
    this.enter('status', req);
    if (!this.ready) throw new NodenetError(ErrorCode.NotAvailable, 'agent is not ready');
  }

  async gc(req: CniCallRequest): Promise<void> {
    const conf = this.enter('gc', req);
    const keep = new Set((conf.validAttachments ?? []).map((a) => `${conf.name}/${a.containerId}/${a.ifName}`));
    for (const k of [...this.attachments.keys()]) if (k.startsWith(`${conf.name}/`) && !keep.has(k)) this.attachments.delete(k);
  }

  private enter(cmd: FakeCommand, req: CniCallRequest): ReturnType<typeof parseBridgeNetConf> {
    this.calls.push({ cmd, req });
    if (this.failures.has(cmd)) {
      const err = this.failures.get(cmd);
      this.failures.delete(cmd);
      throw err;
    }
    const conf = parseBridgeNetConf(req.config);
    const container = cmd === 'add' || cmd === 'del' || cmd === 'check';
    if (container && (req.containerId === '' || req.ifName === '')) {
      throw new NodenetError(ErrorCode.InvalidEnvironment, `${cmd} without container ID or interface name`);
    }
    if ((cmd === 'add' || cmd === 'check') && req.netns === '') {
      throw new NodenetError(ErrorCode.InvalidEnvironment, `${cmd} without CNI_NETNS`);
    }
    return conf;
  }
}
