/** Writes /proc/sys in the calling process's network namespace (the agent runs in the node's). */
import { readFile, writeFile } from 'node:fs/promises';
import type { Sysctl } from './deps.js';

export class ProcSysctl implements Sysctl {
  async set(key: string, value: string): Promise<void> {
    if (!/^[a-z0-9_/.-]+$/.test(key) || key.includes('..')) throw new Error(`bad sysctl key ${key}`);
    const path = `/proc/sys/${key}`;
    const cur = (await readFile(path, 'utf8').catch(() => '')).trim();
    if (cur !== value) await writeFile(path, value);
  }
}
