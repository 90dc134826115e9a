"""What the embedded backend changes in moto's core: its clock, memoised answers, request
ids, region lists and the model objects it keeps.
"""
