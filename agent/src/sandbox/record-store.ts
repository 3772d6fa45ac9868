/**
 * Attachment records on disk: one JSON file per (containerID, ifName) under
 * <stateDir>/attachments, written atomically (tmp + rename), so a crash
 * leaves either the old file or the new one. They let DEL, CHECK and GC find
 * what ADD made even when the runtime no longer passes a netns or a config.
 */
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import type { AttachmentRecord, AttachmentStore } from './deps.js';

function fileName(containerId: string, ifName: string): string {
  // Container IDs are validated by the skel, but hash anyway: a file name must never come from user input.
  return `${createHash('sha256').update(`${containerId}/${ifName}`).digest('hex').slice(0, 32)}.json`;
}

export class DiskAttachmentStore implements AttachmentStore {
  constructor(private readonly dir: string) {}

  async put(r: AttachmentRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const f = `${this.dir}/${fileName(r.containerId, r.ifName)}`;
    await writeFile(`${f}.tmp`, JSON.stringify(r), { mode: 0o600 });
    await rename(`${f}.tmp`, f);
  }

  async get(containerId: string, ifName: string): Promise<AttachmentRecord | null> {
    try {
      return parseRecord(JSON.parse(await readFile(`${this.dir}/${fileName(containerId, ifName)}`, 'utf8')));
    } catch {
      return null;
    }
  }

  async delete(containerId: string, ifName: string): Promise<void> {
    await rm(`${this.dir}/${fileName(containerId, ifName)}`, { force: true });
  }

  async list(): Promise<readonly AttachmentRecord[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const out: AttachmentRecord[] = [];
    for (const n of names.filter((n) => n.endsWith('.json'))) {
      try {
        const r = parseRecord(JSON.parse(await readFile(`${this.dir}/${n}`, 'utf8')));
        if (r) out.push(r);
      } catch {
        /* a file being replaced; the next list sees it */
      }
    }
    return out;
  }
}

/** In-memory store for unit tests. */
export class MemoryAttachmentStore implements AttachmentStore {
  private m = new Map<string, AttachmentRecord>();
  async put(r: AttachmentRecord): Promise<void> { this.m.set(`${r.containerId}/${r.ifName}`, r); }
  async get(c: string, i: string): Promise<AttachmentRecord | null> { return this.m.get(`${c}/${i}`) ?? null; }
  async delete(c: string, i: string): Promise<void> { this.m.delete(`${c}/${i}`); }
  async list(): Promise<readonly AttachmentRecord[]> { return [...this.m.values()]; }
}

function parseRecord(v: unknown): AttachmentRecord | null {
  if (typeof v !== 'object' || v === null) return null;
  const o = v as Record<string, unknown>;
  const s = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : null);
  const containerId = s('containerId'), ifName = s('ifName'), network = s('network'), hostIf = s('hostIf');
  if (!containerId || !ifName || !network || !hostIf || !Array.isArray(o['ips'])) return null;
  return {
    containerId, ifName, network, hostIf,
    netns: s('netns') ?? '',
    ips: (o['ips'] as unknown[]).filter((x): x is string => typeof x === 'string'),
    ipMasq: o['ipMasq'] === true,
    ipam: o['ipam'],
  };
}
