export declare const NATIVE: readonly string[];
export declare const NATIVE_EXTERNAL: string[];
export declare const REQUIRE_BANNER: string;
