import type { Request, RequestHandler, Response } from 'express';

import { formatMinor } from '../../../shared/billing/majorUnits.ts';
import { findConsoleMembers } from '../../../shared/db/queries/members.ts';
import type { BrowserContext } from '../browserContext.ts';
import { noticeOf } from '../confirm.ts';
import type { ConsoleContext } from './consoleContextType.ts';
import { sendConsoleError } from './layout.ts';

export const badForm = 'This form was not sent from this site, or it expired. Go back and try again.';

export type { ConsoleContext } from './consoleContextType.ts';

/**
 * Resolves the session and the workspace a console URL names (/console/{memberId}/…). The member id
 * must be one of the session's own: another workspace's pages answer 404, never its data. A POST
 * must carry this session's CSRF token. Answers (redirect or error) and returns null otherwise.
 */
export async function consoleContext(
  web: BrowserContext,
  req: Request,
  res: Response,
  options: { form?: boolean } = {},
): Promise<ConsoleContext | null> {
  const person = await web.sessions.current(req);
  if (!person) {
    const back = req.method === 'GET' ? req.originalUrl : '/console';
    res.redirect(303, `/account/sign-in?return_to=${encodeURIComponent(back)}`);
    return null;
  }
  const members = await findConsoleMembers(web.pool, person.memberIds);
  const memberId = typeof req.params.memberId === 'string' ? req.params.memberId : undefined;
  const member = members.find((m) => m.id === memberId);
  const csrf = await web.csrf.tokenFor(req, res, person.sessionId, web.sessions.secure);
  if (!member) {
    sendConsoleError(res, { person, members, csrf }, 404, 'Not found', 'No such workspace in your account.');
    return null;
  }
  const c = { person, member, members, csrf, base: `/console/${member.id}`, notice: noticeOf(req) };
  if (options.form && !(await web.csrf.verify(req, person.sessionId))) {
    sendConsoleError(res, c, 403, 'Form expired', badForm);
    return null;
  }
  return c;
}

/**
 * consoleContext for a page or form only developers may use: also null once a member without
 * developer access is refused (403). `what` is what they cannot do, as in "change keys".
 */
export async function developerContext(
  web: BrowserContext,
  req: Request,
  res: Response,
  what: string,
  options: { form?: boolean } = {},
): Promise<ConsoleContext | null> {
  const c = await consoleContext(web, req, res, options);
  if (!c || c.member.has_developer_access) return c;
  sendConsoleError(res, c, 403, 'No developer access', `You cannot ${what} in this workspace.`);
  return null;
}

/**
 * Answers a console list's page at `cursor`. A list that carries its own create form (webhooks,
 * OAuth apps) also answers a refused form: the first page again, with the status and the problem.
 */
export type ListSender = (
  web: BrowserContext,
  c: ConsoleContext,
  res: Response,
  cursor: string,
  status?: number,
  error?: string,
  /** What the refused form held, shown again so nothing typed is lost. */
  typed?: TypedForm,
) => Promise<void>;

/** A refused form's fields as the member sent them. */
export type TypedForm = Record<string, string | string[]>;

/** GET of a console list: the page its `cursor` names. */
export function showList(web: BrowserContext, send: ListSender): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (c) await send(web, c, res, param(req, 'cursor'));
  };
}

/** A form field as one string ('' when absent or repeated). */
export function field(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value.trim() : '';
}

/** A form field that may repeat (checkboxes), as a list. */
export function fields(req: Request, name: string): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** A query parameter as one string ('' when absent or repeated). */
export function param(req: Request, name: string): string {
  const value = req.query[name];
  return typeof value === 'string' ? value.trim() : '';
}

/** An amount in minor units as people read it, in the major unit with the currency's decimals. */
export const money = formatMinor;

export const when = (iso: string | null) => (iso ? `${iso.replace('T', ' ').slice(0, 16)} UTC` : 'never');
