import http from 'node:http';

import type { Express } from 'express';

type Classes = {
  IncomingMessage: typeof http.IncomingMessage;
  ServerResponse: typeof http.ServerResponse;
};

/**
 * Request and response classes for a server of `app` whose instances are born on `app.request` and
 * `app.response`. Express moves every request and response onto those prototypes as it starts
 * handling them (Object.setPrototypeOf), and V8 rebuilds an object's hidden class for each such move:
 * counted with callgrind, 6.6 % of the serving thread's instructions on `GET /me` (3.9 % of its CPU a
 * call, measured side by side). An object already on the prototype it is moved to stays as it is.
 */
export function bornOnAppPrototypes(app: Express): Classes {
  function Request(...args: unknown[]): http.IncomingMessage {
    return Reflect.construct(http.IncomingMessage, args, Request) as http.IncomingMessage;
  }
  Request.prototype = app.request;
  function Response(...args: unknown[]): http.ServerResponse {
    return Reflect.construct(http.ServerResponse, args, Response) as http.ServerResponse;
  }
  Response.prototype = app.response;
  return {
    IncomingMessage: Request as unknown as typeof http.IncomingMessage,
    ServerResponse: Response as unknown as typeof http.ServerResponse,
  };
}
