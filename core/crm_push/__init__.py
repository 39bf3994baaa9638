"""Pushing leads to the workspace's CRM destinations (plugins registered by
``register_crm_destinations``), recording each sync, retrying failed ones."""
