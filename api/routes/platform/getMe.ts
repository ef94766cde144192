import type { Principal } from '../../../shared/auth/principal.ts';
import type { OperationCall } from '../../pipeline/operationCall.ts';

export function toKeyRecord(p: Principal) {
  return {
    app: p.projects.length === 1 ? p.projects[0]! : null,
    projects: p.projects,
    key: {
      id: p.credentialId,
      name: p.name,
      type: p.credentialType,
      livemode: p.livemode,
      hint: p.hint,
      workspaceId: p.workspaceId,
      createdAt: p.createdAt,
      expiresAt: p.expiresAt,
      monthlySpendCap:
        p.monthlySpendCapMinor === null ? null : { amount: p.monthlySpendCapMinor, currency: p.currency },
    },
    scope: p.scope,
  };
}

/** GET /me: the calling credential. */
export const getMe = async (call: OperationCall) => ({ status: 200, body: toKeyRecord(call.principal!) });
