declare module 's3rver' {
  type Options = {
    address?: string;
    port?: number;
    directory?: string;
    silent?: boolean;
    resetOnClose?: boolean;
    configureBuckets?: { name: string; configs: (string | Buffer)[] }[];
  };
  /** The part of Koa's context the embedded server's extensions use. */
  export type KoaContext = {
    method: string;
    path: string;
    query: Record<string, string | string[] | undefined>;
    params?: Record<string, string>;
    state: Record<string, unknown>;
    status: number;
    body: unknown;
  };
  export type KoaMiddleware = (ctx: KoaContext, next: () => Promise<unknown>) => Promise<unknown> | unknown;
  export default class S3rver {
    constructor(options: Options);
    /** Koa's middleware stack, composed when the server starts listening. */
    middleware: KoaMiddleware[];
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}

declare module 's3rver/lib/models/error.js' {
  /** s3rver's error: its `onerror` renders it as S3's XML error body with the code's status. */
  export default class S3Error extends Error {
    constructor(code: string, message?: string, detail?: Record<string, unknown>);
  }
}

declare module 's3rver/lib/models/account.js' {
  const account: { DUMMY_ACCOUNT: { id: number; displayName: string } };
  export default account;
}

declare module 's3rver/lib/middleware/authentication.js' {
  import type { KoaMiddleware } from 's3rver';

  /** s3rver's request signature check, which its router runs before every operation. */
  export default function authentication(): KoaMiddleware;
}
