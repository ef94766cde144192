import type { RequestHandler } from 'express';

import { searchBrainPages } from '../../../shared/db/queries/brainPages.ts';
import type { AppDeps } from '../../deps.ts';

const maxResults = 10;

/** POST /brain/search: ranked pages the key's creator may see. Free: nothing is metered. */
export function searchBrain({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const { query } = req.body as { query: string }; // shape enforced by the OpenAPI validator
    const principal = req.principal!;
    const hits = await searchBrainPages(pool, {
      workspaceId: principal.workspaceId,
      memberId: principal.memberId,
      query,
      limit: maxResults,
    });
    res.json({
      results: hits.map((h) => ({
        pageId: h.id,
        slug: h.slug,
        title: h.title,
        score: h.score,
        snippet: h.snippet,
      })),
    });
  };
}
