"""Teaching: lessons made of arms (scenarios compared), beats (story moments found in the records)
and claims (checked on the arms' runs), for one engine and for fleets."""
