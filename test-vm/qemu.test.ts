import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cables, encodeFrame, FrameReader, imageFileNames, imageKey, parseResult, qemuArgv, resultLine, switchPorts, vmIP, vmMac, type VmSpec } from './qemu.js';

const spec: VmSpec = {
  index: 2, kernel: '/c/vmlinuz', initrd: '/c/initrd.img', rootfs: '/c/rootfs.ext4', serialLog: '/r/vm2.serial.log',
  accel: 'tcg', memoryMiB: 1024, cpus: 2, nic: { socket: '/r/link.sock', server: false },
  shares: [{ tag: 'repo', path: '/work/main', readonly: true }, { tag: 'share', path: '/r/share', readonly: false }],
  append: ['nodenet.vm=2'],
};

const after = (argv: string[], flag: string) => argv.filter((_, i) => argv[i - 1] === flag);

t.test('qemuArgv: direct kernel boot, snapshot root, serial to a file, no display, stream NIC on a unix socket', async (t) => {
  const a = qemuArgv(spec);
  t.same(after(a, '-machine'), ['pc']);
  t.same(after(a, '-accel'), ['tcg,thread=multi']);
  t.same([after(a, '-kernel'), after(a, '-initrd')], [['/c/vmlinuz'], ['/c/initrd.img']]);
  t.match(after(a, '-append')[0], /console=ttyS0 root=\/dev\/vda .*nodenet\.vm=2$/);
  t.same(after(a, '-drive'), ['file=/c/rootfs.ext4,format=raw,if=virtio,snapshot=on,cache=unsafe']);
  t.same(after(a, '-serial'), ['file:/r/vm2.serial.log']);
  t.same(after(a, '-display'), ['none']);
  t.same(after(a, '-netdev'), ['stream,id=n0,server=off,addr.type=unix,addr.path=/r/link.sock']);
  t.same(after(a, '-device')[0], `virtio-net-pci,netdev=n0,mac=${vmMac(2)}`);
  t.same(after(a, '-fsdev'), ['local,id=fs0,path=/work/main,security_model=none,readonly=on', 'local,id=fs1,path=/r/share,security_model=none']);
  t.ok(after(a, '-netdev').every((x) => x.startsWith('stream,') && x.includes('addr.type=unix')), 'no netdev that touches the host network');
  t.same(after(qemuArgv({ ...spec, accel: 'kvm', nic: { socket: '/s', server: true } }), '-accel'), ['kvm']);
  t.match(after(qemuArgv({ ...spec, nic: { socket: '/s', server: true } }), '-netdev')[0], /server=on/);
});

t.test('vmMac and vmIP are distinct per VM', async (t) => {
  t.equal(vmMac(1), '52:54:00:6e:6e:01');
  t.equal(vmMac(12), '52:54:00:6e:6e:0c');
  t.equal(vmIP(3), '192.168.100.13');
});

t.test('cables: a direct cable for 2 VMs (VM1 listens), the switch for 3', async (t) => {
  t.same(cables(2, '/r'), { nics: [{ socket: '/r/link.sock', server: true }, { socket: '/r/link.sock', server: false }], switchSockets: [] });
  const three = cables(3, '/r');
  t.same(three.switchSockets, ['/r/sw1.sock', '/r/sw2.sock', '/r/sw3.sock']);
  t.ok(three.nics.every((n) => !n.server), 'every VM is a client of the switch');
  t.throws(() => cables(0, '/r'), /at least one VM/);
});

t.test('parseResult: the last result line of a serial log, with CRs and console noise', async (t) => {
  t.equal(parseResult('[    0.1] booting\nno result yet\n'), null);
  t.same(parseResult('x\r\nNODENET-VM-RESULT pass overlay-iptables vm1 12.3s ok all\r\n'), { pass: true, suite: 'overlay-iptables', details: 'vm1 12.3s ok all' });
  t.same(parseResult('NODENET-VM-RESULT pass a first\n[  5.0] NODENET-VM-RESULT fail a vm2 boom\n'), { pass: false, suite: 'a', details: 'vm2 boom' });
  t.same(parseResult('NODENET-VM-RESULT fail init\n'), { pass: false, suite: 'init', details: '' });
  t.equal(parseResult('NODENET-VM-RESULT maybe a b\n'), null, 'only pass or fail');
  t.equal(parseResult('echo "NODENET-VM-RESULT fail ${suite}'), null, 'a shell line quoting it is not a result');
});

t.test('resultLine round-trips through parseResult on one line', async (t) => {
  const line = resultLine({ pass: false, suite: 'ipvs-smoke', details: 'vm1 it broke:\n  here' });
  t.equal(line, 'NODENET-VM-RESULT fail ipvs-smoke vm1 it broke: here');
  t.same(parseResult(`${line}\n`), { pass: false, suite: 'ipvs-smoke', details: 'vm1 it broke: here' });
});

t.test('imageKey: stable, order-independent, and changed by every input', async (t) => {
  const base = { files: [{ name: 'a.sh', content: 'x' }, { name: 'b.txt', content: 'y' }], kernel: 'linux-image-6.1.0-57-amd64 6.1.192-3', nodeSha256: 'aa', mirror: 'http://m' };
  const k = imageKey(base);
  t.match(k, /^[0-9a-f]{16}$/);
  t.equal(imageKey({ ...base, files: [...base.files].reverse() }), k, 'file order does not matter');
  const variants = [
    { ...base, files: [{ name: 'a.sh', content: 'x2' }, base.files[1]!] },
    { ...base, files: [{ name: 'a2.sh', content: 'x' }, base.files[1]!] },
    { ...base, files: [base.files[0]!] },
    { ...base, kernel: 'linux-image-6.1.0-58-amd64 6.1.200-1' },
    { ...base, nodeSha256: 'ab' },
    { ...base, mirror: 'http://other' },
    // name/content boundaries cannot be shifted into each other
    { ...base, files: [{ name: 'a.sh', content: 'xy' }, { name: 'b.txt', content: '' }] },
  ];
  for (const v of variants) t.not(imageKey(v), k);
});

t.test('FrameReader: frames across arbitrary chunk boundaries; encodeFrame is its inverse', async (t) => {
  const f1 = Buffer.from('0123456789abcdef');
  const f2 = Buffer.alloc(1500, 7);
  const wire = Buffer.concat([encodeFrame(f1), encodeFrame(f2)]);
  for (const cut of [1, 3, 4, 5, 20, wire.length - 1]) {
    const r = new FrameReader();
    const got = [...r.push(wire.subarray(0, cut)), ...r.push(wire.subarray(cut))];
    t.same(got.map((b) => b.toString('hex')), [f1.toString('hex'), f2.toString('hex')], `cut at ${cut}`);
  }
  t.throws(() => new FrameReader().push(Buffer.from([0xff, 0xff, 0xff, 0xff])), /not a qemu stream/);
});

t.test('switchPorts: floods unknown and broadcast, learns sources, forwards unicast to one port', async (t) => {
  const mac = (n: number) => Buffer.from([0x52, 0x54, 0, 0x6e, 0x6e, n]);
  const frame = (dst: Buffer, src: Buffer) => Buffer.concat([dst, src, Buffer.from([0x08, 0x00]), Buffer.alloc(46)]);
  const table = new Map<string, number>();
  const ports = [0, 1, 2];
  const bcast = Buffer.alloc(6, 0xff);
  t.same(switchPorts(frame(bcast, mac(1)), 0, ports, table), [1, 2], 'broadcast floods the others');
  t.same(switchPorts(frame(mac(1), mac(2)), 1, ports, table), [0], 'learned: VM1 is on port 0');
  t.same(switchPorts(frame(mac(2), mac(1)), 0, ports, table), [1]);
  t.same(switchPorts(frame(mac(3), mac(1)), 0, ports, table), [1, 2], 'unknown unicast floods');
  t.same(switchPorts(frame(mac(1), mac(1)), 0, ports, table), [], 'never back to the sender');
  t.same(switchPorts(Buffer.alloc(10), 0, ports, table), [], 'a runt is dropped');
});

const imgHere = fileURLToPath(new URL('.', import.meta.url));
const kernelDep = /Depends: (linux-image-\d\S*-amd64)/.exec(spawnSync('apt-cache', ['depends', 'linux-image-amd64'], { encoding: 'utf8' }).stdout ?? '')?.[1];
const imageTools = ['debootstrap', 'mkfs.ext4', 'cpio', 'busybox'].filter((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0);
const keySkip = !kernelDep ? 'apt-cache cannot resolve linux-image-amd64 here (no apt-get update): the script could not either'
  : imageTools.length ? `the image's tools are not installed (${imageTools.join(', ')}): CI installs them` : false;

t.test('build-image.sh --print-key makes the key imageKey makes (.ci/run builds the image before tsx exists)', { skip: keySkip }, async (t) => {
  const ver = /^Version: (\S+)/m.exec(spawnSync('apt-cache', ['show', kernelDep!], { encoding: 'utf8' }).stdout)?.[1] ?? '';
  const files = imageFileNames(readdirSync(`${imgHere}image`)).map((name) => ({ name, content: readFileSync(`${imgHere}${name}`) }));
  const mirror = 'http://deb.debian.org/debian';
  const want = imageKey({ files, kernel: `${kernelDep} ${ver}`, nodeSha256: createHash('sha256').update(readFileSync(process.execPath)).digest('hex'), mirror });
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NODENET_NODE_BINARY: process.execPath, NODENET_VM_MIRROR: mirror };
  delete env['NODENET_VM_KEY'];
  const r = spawnSync('bash', [`${imgHere}build-image.sh`, '--print-key'], { encoding: 'utf8', env });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stdout.trim(), want);
});
