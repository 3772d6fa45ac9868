import t from 'tap';
import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { joinCommand, listSandboxes, type SandboxRef } from './pause-holder.js';
import type { NetnsPath } from './netns.js';

const ref = (pidnsPath?: string): SandboxRef => ({
  name: 'p1', runDir: '/run/nodenet', pid: 4242, pidNamespace: pidnsPath !== undefined,
  netnsPath: '/run/nodenet/netns/p1' as NetnsPath, ipcPath: '/proc/4242/ns/ipc', utsPath: '/proc/4242/ns/uts',
  ...(pidnsPath ? { pidnsPath } : {}),
});

t.test('joinCommand', async (t) => {
  t.same(joinCommand(ref(), ['sleep', '1']), [
    'nsenter', '--net=/run/nodenet/netns/p1', '--ipc=/proc/4242/ns/ipc', '--uts=/proc/4242/ns/uts', '--', 'sleep', '1',
  ]);
  t.same(joinCommand(ref('/proc/4242/ns/pid'), ['app', '--flag'], { cwd: '/srv' }), [
    'nsenter', '--net=/run/nodenet/netns/p1', '--ipc=/proc/4242/ns/ipc', '--uts=/proc/4242/ns/uts',
    '--pid=/proc/4242/ns/pid', '--mount=/proc/4242/ns/mnt', '--wd=/srv', '--', 'app', '--flag',
  ]);
});

t.test('listSandboxes reads state files and skips junk', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nn-nl-list-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.same(listSandboxes(dir), [], 'no sandboxes dir');
  mkdirSync(join(dir, 'sandboxes'));
  writeFileSync(join(dir, 'sandboxes', 'a.json'), JSON.stringify({ name: 'a', pid: process.pid, startTime: '1', pidNamespace: true }));
  writeFileSync(join(dir, 'sandboxes', 'b.json'), '{not json');
  writeFileSync(join(dir, 'sandboxes', 'c.json'), JSON.stringify({ name: 'other', pid: 1, startTime: '1', pidNamespace: false }));
  writeFileSync(join(dir, 'sandboxes', 'a.log'), '');
  const l = listSandboxes(dir);
  t.equal(l.length, 1);
  t.match(l[0], { name: 'a', pid: process.pid, alive: false, pidnsPath: `/proc/${process.pid}/ns/pid`, netnsPath: join(dir, 'netns', 'a') });
});
