export declare const CNI_DIR: string;
export declare function shimSources(): string[];
export declare function shimCompileArgs(outfile: string): string[];
export declare function buildShim(outfile: string): string;
export declare function shimStale(outfile: string): boolean;
