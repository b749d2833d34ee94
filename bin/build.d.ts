// Types for bin/build.js, which stays JavaScript because it runs before anything is compiled.
export declare const ROOT: string;
export declare const STAMP: string;
export declare const CLIENT_PACKAGE: string;
export declare function staleReason(root?: string): string | undefined;
export declare function canBuild(root?: string): boolean;
export declare function build(root?: string): Promise<boolean>;
