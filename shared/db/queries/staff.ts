import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { findInWorkspace, type NewWorkspaceRecord, workspaceRecord } from './workspaceRows.ts';

export const staffStatus = z.enum(['active', 'inactive']);
export type StaffStatus = z.infer<typeof staffStatus>;

const staffRow = workspaceRecord.extend({
  name: z.string(),
  role: z.string(),
  status: staffStatus,
  api_address: z.string(),
  api_channel_enabled: z.boolean(),
  created_at: isoTimestamp,
});
export type StaffRow = z.infer<typeof staffRow>;

const columns = sql.fragment`id, workspace_id, name, role, status, api_address, api_channel_enabled, created_at`;

export type NewStaffMember = NewWorkspaceRecord & {
  name: string;
  role: string;
  apiAddress: string;
  apiChannelEnabled: boolean;
};

export function insertStaffMember(db: Db, s: NewStaffMember) {
  return db.one(sql.type(staffRow)`
    insert into staff_members (id, workspace_id, name, role, api_address, api_channel_enabled)
    values (${s.id}, ${s.workspaceId}, ${s.name}, ${s.role}, ${s.apiAddress}, ${s.apiChannelEnabled})
    returning ${columns}
  `);
}

export function listActiveStaff(db: Db, workspaceId: string) {
  return db.any(sql.type(staffRow)`
    select ${columns} from staff_members
    where workspace_id = ${workspaceId} and status = 'active'
    order by created_at, id
  `);
}

/** An active staff member of the workspace (assignable to a task). */
export function findActiveStaffMember(db: Db, workspaceId: string, staffId: string) {
  return db.maybeOne(sql.type(staffRow)`
    select ${columns} from staff_members
    where id = ${staffId} and workspace_id = ${workspaceId} and status = 'active'
  `);
}

/** The staff member reachable at a trigger address from this workspace: active, API channel on. */
export function findTriggerableStaffMember(db: Db, workspaceId: string, apiAddress: string) {
  return db.maybeOne(sql.type(staffRow)`
    select ${columns} from staff_members
    where api_address = ${apiAddress} and workspace_id = ${workspaceId}
      and status = 'active' and api_channel_enabled
  `);
}

export function setStaffStatus(db: Db, staffId: string, status: StaffStatus) {
  return db.maybeOne(sql.type(staffRow)`
    update staff_members set status = ${status} where id = ${staffId} returning ${columns}
  `);
}

export function setStaffApiChannel(db: Db, staffId: string, enabled: boolean) {
  return db.maybeOne(sql.type(staffRow)`
    update staff_members set api_channel_enabled = ${enabled} where id = ${staffId} returning ${columns}
  `);
}

/** A staff member of the workspace, whatever its status (a reply queued before deactivation still runs). */
export function findWorkspaceStaffMember(db: Db, workspaceId: string, staffId: string) {
  return findInWorkspace(db, { name: 'staff_members', row: staffRow, columns }, workspaceId, staffId);
}
