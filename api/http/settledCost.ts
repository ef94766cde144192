import type { Request, Response } from 'express';

/**
 * `cost` of a response: the settled charge in the workspace currency (0 for test keys), also kept
 * where the request log reads it.
 */
export function settledCost(req: Request, res: Response, costMinor: number) {
  res.locals.costMinor = costMinor;
  return { amount: costMinor, currency: req.principal!.currency };
}
