"""The online outcome of recommendations: did the user act on a recommended item soon after?"""
