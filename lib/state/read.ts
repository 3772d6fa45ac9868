/**
 * state/read: reading back a JSON file nodenet wrote (records, owner files,
 * the proxy status), through json/read's path-aware readers.
 */
import { readFileSync } from 'node:fs';
import { readJsonText, StateFileError, type ObjectReader } from '../json/read.js';

/** readJsonText over a file. A missing file is a StateFileError whose cause has code ENOENT. */
export function readJsonFile<T>(file: string, read: (r: ObjectReader) => T): T {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new StateFileError(file, `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  return readJsonText(file, text, read);
}

/** Whether an error from readJsonFile means the file does not exist. */
export function isMissingFile(e: unknown): boolean {
  return e instanceof StateFileError && (e.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}
