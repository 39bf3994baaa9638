"""One read-only CRM model (contacts, companies, deals) over every CRM with a mapper (4.19)."""
