/** Where the built artefacts are: next to the bundle (dist/) when bundled, or the repo's dist/ under tsx. */
import { fileURLToPath } from 'node:url';

export function distDir(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  if (here.endsWith('/dist/')) return here;
  // A bundle one level down (test-vm's guest side, dist/vm/; a chunk the bundle loads on demand, dist/chunks/).
  if (here.endsWith('/dist/vm/') || here.endsWith('/dist/chunks/')) return fileURLToPath(new URL('../', import.meta.url));
  return fileURLToPath(new URL('../../../dist/', import.meta.url));
}
/** The CNI shim: a native executable (cni/*.c), run directly, no node needed. */
export const shimPath = (): string => `${distDir()}nodenet-cni`;
export const pausePath = (): string => `${distDir()}nodenet-pause`;
/** The repository (or package) root: the parent of dist/. */
export const packageRoot = (): string => fileURLToPath(new URL('../', `file://${distDir()}`));
