import express, { type Express } from 'express';

// Base64 OCR data may be 20 MiB of bytes, about 27 MiB of text.
const jsonLimit = '28mb';

/**
 * Parses JSON bodies. A body that fails to parse is kept on `req.bodyError` rather than answered at
 * once, so a request with a bad key still gets the authentication error first (DESIGN.md check order).
 */
export function installBodyParsers(app: Express): void {
  const json = express.json({ limit: jsonLimit, type: ['application/json', 'application/*+json'] });
  app.use((req, res, next) => {
    json(req, res, (error?: unknown) => {
      if (error) {
        req.bodyError = error;
        req.body = undefined;
      }
      next();
    });
  });
}
