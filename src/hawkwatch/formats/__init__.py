"""Readers and writers of external formats; each format has one owner module."""
