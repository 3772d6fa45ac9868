import t from 'tap';
import { mountOf, parseProcStatCpuMs, parseProcStatIdentity, parseProcStatTotals, parseProcStatus } from './proc.js';

t.test('parseProcStatus: VmRSS and VmHWM in KiB', async (t) => {
  const text = 'Name:\tnode\nVmPeak:\t 1241504 kB\nVmHWM:\t  165432 kB\nVmRSS:\t  150696 kB\nThreads:\t11\n';
  t.same(parseProcStatus(text), { rssKiB: 150696, hwmKiB: 165432 });
  t.throws(() => parseProcStatus('Name:\tnode\nVmHWM:\t1 kB\n'), /no VmRSS/);
});

t.test('parseProcStatCpuMs: utime + stime, counted after the command name', async (t) => {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
  const plain = '19460 (node) R 19459 19459 1 0 -1 4194304 100 0 0 0 512 88 0 0 20 0 11 0';
  t.equal(parseProcStatCpuMs(plain), 6000);
  const odd = '77 (my (odd) name) S 1 77 77 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0';
  t.equal(parseProcStatCpuMs(odd), 70, 'spaces and parentheses in the name');
  t.equal(parseProcStatCpuMs(plain, 1), 600, 'tick length is a parameter');
  t.throws(() => parseProcStatCpuMs('garbage'), TypeError);
  t.throws(() => parseProcStatCpuMs('1 (x) R 1'), /utime/);
});

t.test('parseProcStatTotals: busy and idle of the first line', async (t) => {
  const text = 'cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\nintr 1\n';
  t.same(parseProcStatTotals(text), { busyMs: (100 + 5 + 50 + 3 + 2 + 1) * 10, idleMs: (1000 + 20) * 10 });
  t.throws(() => parseProcStatTotals('intr 1\n'), /no "cpu " line/);
});

t.test('mountOf: the longest mount point above the path', async (t) => {
  const mounts = [
    '/dev/vda / ext4 rw,relatime 0 0',
    'proc /proc proc rw 0 0',
    'tmpfs /tmp tmpfs rw 0 0',
    'tmpfs /tmpx tmpfs rw 0 0',
    '/dev/vdb /mnt/with\\040space xfs rw 0 0',
    '',
  ].join('\n');
  t.same(mountOf('/tmp/nn-bench-apiserver-x', mounts), { device: 'tmpfs', mountPoint: '/tmp', fsType: 'tmpfs' });
  t.same(mountOf('/tmpfoo/x', mounts), { device: '/dev/vda', mountPoint: '/', fsType: 'ext4' }, '/tmp is not a parent of /tmpfoo');
  t.same(mountOf('/mnt/with space/d', mounts), { device: '/dev/vdb', mountPoint: '/mnt/with space', fsType: 'xfs' }, 'octal escapes decoded');
  t.same(mountOf('/tmp', mounts)?.fsType, 'tmpfs');
  t.same(mountOf('/var/lib', '/dev/vda / ext4 rw 0 0\noverlay / overlay rw 0 0\n')?.fsType, 'overlay', 'the last mount over the same point wins');
  t.equal(mountOf('/x', ''), null);
});

t.test('parseProcStatIdentity: pid, command name and parent, whatever the name holds', async (t) => {
  t.same(parseProcStatIdentity('19460 (etcd) S 19459 19459 1 0 -1 4194304 100 0 0 0 512 88'), { pid: 19460, comm: 'etcd', ppid: 19459 });
  t.same(parseProcStatIdentity('77 (my (odd) name) S 1 77 77 0'), { pid: 77, comm: 'my (odd) name', ppid: 1 });
  t.throws(() => parseProcStatIdentity('garbage'), TypeError);
  t.throws(() => parseProcStatIdentity('x (etcd) S y'), /not a number/);
});
