export declare const SHIM_SHEBANG: string;
export declare function shimCode(): Promise<string>;
export declare function codeCacheFor(code: string): Buffer;
export declare function shimFile(code: string, cache: Uint8Array | null, shebang?: string): string;
export declare function buildShim(outfile: string, opts?: { shebang?: string; codeCache?: boolean }): Promise<void>;
