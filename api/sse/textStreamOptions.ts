export type TextStreamOptions = {
  /** Interval of comment lines that keep proxies and load balancers from closing a stream that waits on a slow model. */
  keepaliveMs: number;
  /** How long the stream's last events may wait to be flushed to a reader that does not read before the connection is cut. */
  stallMs: number;
};

export const defaultTextStreamOptions: TextStreamOptions = Object.freeze({
  keepaliveMs: 15_000,
  stallMs: 10_000,
});
