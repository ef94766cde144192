/** One problem with a request, as the contract checks report it (installErrorHandler maps them). */
export type Problem = { path: string; message: string; errorCode?: string };

/** What the contract checks throw: express-openapi-validator's shape, which the error mapping reads. */
export type ValidationError = Error & { status: number; errors: Problem[] };

export const validationError = (errors: Problem[], status = 400): ValidationError =>
  Object.assign(new Error('request validation failed'), { status, errors });
