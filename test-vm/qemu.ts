/**
 * test-vm/qemu: the pure parts of the VM runner (run.ts): the qemu command
 * line of one VM, the underlay each suite gets, the result line a VM prints
 * on its serial console, the image's cache key, and the framing of qemu's
 * `-netdev stream` (the small switch that links 3 VMs). No fs, no processes.
 *
 * The VMs never touch a host interface: every NIC is a `-netdev stream` over
 * a unix socket in the run directory. Two VMs: VM1 is the socket's server
 * and VM2 its client, a point-to-point cable. Three or more: each VM is a
 * client of the runner's switch (switch.ts), one socket per VM.
 */
import { createHash } from 'node:crypto';

export type Accel = 'kvm' | 'tcg';

export interface VmSpec {
  /** 1-based. */
  readonly index: number;
  readonly kernel: string;
  readonly initrd: string;
  readonly rootfs: string;
  readonly serialLog: string;
  readonly accel: Accel;
  readonly memoryMiB: number;
  readonly cpus: number;
  /** The NIC's cable: a unix socket, and whether this VM listens on it (else it connects). */
  readonly nic: { readonly socket: string; readonly server: boolean };
  /** 9p shares: tag -> host directory, and whether the guest may write. */
  readonly shares: readonly { readonly tag: string; readonly path: string; readonly readonly: boolean }[];
  /** Extra kernel command line words (nodenet.* parameters for the guest). */
  readonly append: readonly string[];
}

/** The MAC of VM n's NIC: locally administered, stable, one per VM. */
export function vmMac(index: number): string {
  return `52:54:00:6e:6e:${index.toString(16).padStart(2, '0')}`;
}

/** VM n's underlay address (192.168.100.10+n/24). */
export function vmIP(index: number): string {
  return `192.168.100.${10 + index}`;
}
export const VM_PREFIX = 24;

/** The argv of one qemu, without the timeout wrapper. */
export function qemuArgv(s: VmSpec): string[] {
  const accel = s.accel === 'kvm' ? ['-accel', 'kvm', '-cpu', 'host,-arch-capabilities'] : ['-accel', 'tcg,thread=multi', '-cpu', 'max'];
  const nic = `stream,id=n0,server=${s.nic.server ? 'on' : 'off'},addr.type=unix,addr.path=${s.nic.socket}`;
  const shares = s.shares.flatMap((sh, i) => [
    '-fsdev', `local,id=fs${i},path=${sh.path},security_model=none${sh.readonly ? ',readonly=on' : ''}`,
    '-device', `virtio-9p-pci,fsdev=fs${i},mount_tag=${sh.tag}`,
  ]);
  const append = ['console=ttyS0', 'root=/dev/vda', 'rw', 'panic=-1', 'loglevel=4', 'quiet', 'mitigations=off', 'tsc=reliable', 'no_timer_check', ...s.append];
  return [
    '-machine', 'pc', ...accel, '-smp', String(s.cpus), '-m', String(s.memoryMiB),
    '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
    '-kernel', s.kernel, '-initrd', s.initrd, '-append', append.join(' '),
    '-drive', `file=${s.rootfs},format=raw,if=virtio,snapshot=on,cache=unsafe`,
    '-netdev', nic, '-device', `virtio-net-pci,netdev=n0,mac=${vmMac(s.index)}`,
    ...shares,
    '-serial', `file:${s.serialLog}`,
  ];
}

/** The NIC cable of every VM of an n-VM suite: a direct cable for 2, the switch's sockets for more. */
export function cables(count: number, dir: string): { nics: { socket: string; server: boolean }[]; switchSockets: string[] } {
  if (count < 1) throw new Error(`a suite needs at least one VM, got ${count}`);
  if (count <= 2) {
    const sock = `${dir}/link.sock`;
    return { nics: Array.from({ length: count }, (_, i) => ({ socket: sock, server: i === 0 })), switchSockets: [] };
  }
  const socks = Array.from({ length: count }, (_, i) => `${dir}/sw${i + 1}.sock`);
  return { nics: socks.map((socket) => ({ socket, server: false })), switchSockets: socks };
}

export const RESULT_PREFIX = 'NODENET-VM-RESULT';

export interface VmResult {
  readonly pass: boolean;
  readonly suite: string;
  readonly details: string;
}

/** The result line of a serial log (`NODENET-VM-RESULT pass|fail <suite> <details>`), the last one; null if none yet. */
export function parseResult(log: string): VmResult | null {
  let found: VmResult | null = null;
  for (const raw of log.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const m = /(?:^|\s)NODENET-VM-RESULT (pass|fail) (\S+)(?: (.*))?$/.exec(line);
    if (m) found = { pass: m[1] === 'pass', suite: m[2]!, details: (m[3] ?? '').trim() };
  }
  return found;
}

/** The line a guest prints. */
export function resultLine(r: VmResult): string {
  return `${RESULT_PREFIX} ${r.pass ? 'pass' : 'fail'} ${r.suite} ${r.details.replace(/\s+/g, ' ').trim()}`.trimEnd();
}

/**
 * The image's cache key: a hash of every input of build-image.sh (each file's name and content, sorted by
 * name), the kernel package and its version, and the node binary's hash. 16 hex digits.
 */
/** The provision/ files the image is made of (provision/nodenet.sh is the Vagrant path's alone). */
export const IMAGE_PROVISION = ['node.sh', 'packages.sh', 'packages.txt', 'system.sh'] as const;

/** The names of the image's input files, relative to test-vm/, given what test-vm/image/ holds. */
export function imageFileNames(imageDir: readonly string[]): string[] {
  return ['build-image.sh', ...imageDir.map((f) => `image/${f}`), ...IMAGE_PROVISION.map((f) => `provision/${f}`)];
}

export function imageKey(inputs: { files: readonly { name: string; content: string | Buffer }[]; kernel: string; nodeSha256: string; mirror: string }): string {
  const h = createHash('sha256');
  h.update(`kernel ${inputs.kernel}\nmirror ${inputs.mirror}\nnode ${inputs.nodeSha256}\n`);
  for (const f of [...inputs.files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    h.update(`file ${f.name} ${Buffer.byteLength(f.content)}\n`);
    h.update(f.content);
  }
  return h.digest('hex').slice(0, 16);
}

/**
 * qemu's stream framing (net/stream.c, as the old `-netdev socket`): each Ethernet frame is a 4-byte
 * big-endian length, then the frame. Feed it bytes in any chunking; it returns whole frames.
 */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  /** The largest frame accepted (a jumbo frame with headroom); anything larger means a broken stream. */
  static readonly MAX = 65_536 + 64;

  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out: Buffer[] = [];
    while (this.buf.length >= 4) {
      const len = this.buf.readUInt32BE(0);
      if (len > FrameReader.MAX) throw new Error(`stream frame of ${len} bytes: not a qemu stream`);
      if (this.buf.length < 4 + len) break;
      out.push(this.buf.subarray(4, 4 + len));
      this.buf = this.buf.subarray(4 + len);
    }
    return out;
  }
}

export function encodeFrame(frame: Buffer): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(frame.length, 0);
  return Buffer.concat([h, frame]);
}

/**
 * A learning switch's decision for one frame from `port`: the ports to send it to. Unicast to a known MAC
 * goes to that port alone (none if it is the sender's own), everything else floods to the other ports.
 * Updates `table` (source MAC -> port).
 */
export function switchPorts(frame: Buffer, port: number, ports: readonly number[], table: Map<string, number>): number[] {
  if (frame.length < 14) return [];
  const dst = frame.subarray(0, 6).toString('hex');
  const src = frame.subarray(6, 12).toString('hex');
  if ((frame[6]! & 1) === 0) table.set(src, port);
  const multicast = (frame[0]! & 1) === 1;
  const known = multicast ? undefined : table.get(dst);
  if (known !== undefined) return known === port ? [] : [known];
  return ports.filter((p) => p !== port);
}
