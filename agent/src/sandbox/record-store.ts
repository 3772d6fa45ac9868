/**
 * Attachment records on disk: one JSON file per (containerID, ifName) under
 * <stateDir>/attachments, replaced durably (state/durable: temp file, fsync,
 * rename, fsync of the directory), so a crash leaves the old file or the new
 * one, and a record ADD reported is on disk. They let DEL, CHECK and GC find
 * what ADD made even when the runtime no longer passes a netns or a config.
 *
 * A record that does not parse is treated as absent (logged by the caller's
 * DEL falling back to IPAM), never as a reason to fail.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { readJsonText, type ObjectReader } from '../../../lib/json/read.js';
import { writeFileDurableAsync } from '../../../lib/state/durable.js';
import type { AttachmentRecord, AttachmentStore } from './deps.js';

function fileName(containerId: string, ifName: string): string {
  // Container IDs are validated by the skel, but hash anyway: a file name must never come from user input.
  return `${createHash('sha256').update(`${containerId}/${ifName}`).digest('hex').slice(0, 32)}.json`;
}

export class DiskAttachmentStore implements AttachmentStore {
  constructor(private readonly dir: string) {}

  async put(r: AttachmentRecord): Promise<void> {
    await writeFileDurableAsync(`${this.dir}/${fileName(r.containerId, r.ifName)}`, JSON.stringify(r));
  }

  async get(containerId: string, ifName: string): Promise<AttachmentRecord | null> {
    const f = `${this.dir}/${fileName(containerId, ifName)}`;
    let text: string;
    try {
      text = await readFile(f, 'utf8');
    } catch {
      return null;
    }
    return parseAttachmentRecord(f, text);
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
    for (const n of names.filter((n) => n.endsWith('.json') && !n.startsWith('.'))) {
      let text: string;
      try {
        text = await readFile(`${this.dir}/${n}`, 'utf8');
      } catch {
        continue; // deleted meanwhile
      }
      const r = parseAttachmentRecord(`${this.dir}/${n}`, text);
      if (r) out.push(r);
    }
    return out;
  }
}

/** In-memory store for unit tests. */
export class MemoryAttachmentStore implements AttachmentStore {
  private m = new Map<string, AttachmentRecord>();
  async put(r: AttachmentRecord): Promise<void> { this.m.set(`${r.containerId}/${r.ifName}`, structuredClone(r)); }
  async get(c: string, i: string): Promise<AttachmentRecord | null> { return this.m.get(`${c}/${i}`) ?? null; }
  async delete(c: string, i: string): Promise<void> { this.m.delete(`${c}/${i}`); }
  async list(): Promise<readonly AttachmentRecord[]> { return [...this.m.values()]; }
}

function readRecord(r: ObjectReader): AttachmentRecord {
  return {
    containerId: r.string('containerId'),
    ifName: r.string('ifName'),
    network: r.string('network'),
    hostIf: r.string('hostIf'),
    netns: r.optString('netns') ?? '',
    ipMasq: r.bool('ipMasq', false),
    ipam: r.raw('ipam'),
  };
}

/** A record file's content, or null when it is not a record (the caller falls back to IPAM). */
export function parseAttachmentRecord(file: string, text: string): AttachmentRecord | null {
  try {
    return readJsonText(file, text, readRecord);
  } catch {
    return null;
  }
}
